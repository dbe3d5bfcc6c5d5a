#pragma once
// The fields of one structured log line as the engine gathers them: names are string
// literals, values are copied by reference count (QVariant holds a QString or a number
// inline). Turning them into a QJsonObject costs a sorted insert and a UTF-8 conversion
// per field; that is left to whoever reads the line, off the request path.

#include <QLatin1String>
#include <QList>
#include <QVariant>

#include <utility>

namespace sw::util {

using LogFields = QList<std::pair<QLatin1String, QVariant>>;

} // namespace sw::util
