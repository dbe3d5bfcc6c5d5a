#pragma once
// The configuration layer in one include, for callers that read, validate and
// write configurations: json_path_reader (typed reads naming the JSON path),
// config_reader (JSON -> Config, validation), config_writer (Config -> JSON,
// atomic save), listen_address and demo_config. New code includes the part it uses.

#include "core/config/config.h"
#include "core/config/config_reader.h"
#include "core/config/config_writer.h"
#include "core/config/demo_config.h"
#include "core/config/json_path_reader.h"
#include "core/config/listen_address.h"
