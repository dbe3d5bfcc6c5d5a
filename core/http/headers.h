#pragma once
// Header fields as both ends of the gateway hold them: in wire order, names
// as sent (compared case-insensitively), values without surrounding spaces.

#include <QByteArray>
#include <QByteArrayView>
#include <QList>
#include <QPair>

namespace sw::http {

using HeaderList = QList<QPair<QByteArray, QByteArray>>;

// The first field named `name` (case-insensitive); empty when there is none.
QByteArray headerValue(const HeaderList &headers, QByteArrayView name);
// An RFC 9110 token (a field name, a method): one or more tchar.
bool isToken(QByteArrayView text);

} // namespace sw::http
