#pragma once
// Which shapes of the clients' file parts the gateway carries to another API, as model Document
// blocks (formats/translation_rules.md, "Documents"). The inbound decoders read exactly these;
// any other document, file or input_file part passes only to its own API, and makes another
// API's candidate incompatible.

#include "core/wire/rapid_json.h"

namespace sw::wire {

// True for an Anthropic `document` (a base64, text, url or file source, no citations asked
// for), a Chat `file` part (file_data or file_id) and a Responses `input_file` (file_data,
// file_id or file_url). False for any other part, and for those types in other shapes.
bool isTranslatableDocument(const rj::Value &part);

} // namespace sw::wire
