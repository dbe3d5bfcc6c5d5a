#pragma once
// Header fields as both ends of the gateway hold them: in wire order, names
// as sent (compared case-insensitively), values without surrounding spaces.

#include <QByteArray>
#include <QByteArrayView>
#include <QList>
#include <QPair>

namespace sw::http {

using HeaderList = QList<QPair<QByteArray, QByteArray>>;

// Field names compare case-insensitively; most names differ in length, which is checked first
// (Qt's case-insensitive compare walks the bytes even then).
inline bool sameName(QByteArrayView a, QByteArrayView b) {
    return a.size() == b.size() && a.compare(b, Qt::CaseInsensitive) == 0;
}

// The first field named `name` (case-insensitive); empty when there is none.
QByteArray headerValue(const HeaderList &headers, QByteArrayView name);
// An RFC 9110 token (a field name, a method): one or more tchar.
bool isToken(QByteArrayView text);

} // namespace sw::http
