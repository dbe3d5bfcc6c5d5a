#include "core/http/head_parser.h"

#include <algorithm>

namespace sw::http {

HeadParser::HeadParser(qsizetype maxHeadBytes, FieldLines fieldLines)
    : m_maxHeadBytes(maxHeadBytes), m_fieldLines(fieldLines) {}

void HeadParser::reset() {
    m_status = Status::Incomplete;
    m_scanned = 0;
    m_headBytes = 0;
    m_startLine.clear();
    m_fields.clear();
    m_hasFields = false;
    m_headers.clear();
    m_headersMade = false;
    m_error.clear();
}

HeadParser::Status HeadParser::fail(Status status, const QString &why) {
    m_status = status;
    m_error = why;
    return status;
}

HeadParser::Status HeadParser::parse(QByteArrayView message) {
    if (m_status != Status::Incomplete)
        return m_status;
    // The head ends at the first LF followed by an empty line (LF or CRLF). A line
    // end found by an earlier call may be the first half of that, hence the step back.
    qsizetype lastLineEnd = -1;
    for (qsizetype i = message.indexOf('\n', std::max<qsizetype>(0, m_scanned - 2)); i >= 0;
         i = message.indexOf('\n', i + 1)) {
        if (i + 1 < message.size() && message.at(i + 1) == '\n') {
            lastLineEnd = i;
            m_headBytes = i + 2;
            break;
        }
        if (i + 2 < message.size() && message.at(i + 1) == '\r' && message.at(i + 2) == '\n') {
            lastLineEnd = i;
            m_headBytes = i + 3;
            break;
        }
    }
    if (lastLineEnd < 0) {
        m_scanned = message.size();
        if (message.size() > m_maxHeadBytes)
            return fail(Status::TooLarge, QStringLiteral("head longer than %1 bytes").arg(m_maxHeadBytes));
        return Status::Incomplete;
    }
    if (m_headBytes > m_maxHeadBytes)
        return fail(Status::TooLarge, QStringLiteral("head longer than %1 bytes").arg(m_maxHeadBytes));

    const QByteArrayView head = message.first(lastLineEnd);
    const qsizetype startEnd = head.indexOf('\n');
    QByteArrayView startLine = startEnd < 0 ? head : head.first(startEnd);
    if (startLine.endsWith('\r'))
        startLine.chop(1);
    m_startLine = startLine.toByteArray();
    m_hasFields = startEnd >= 0;
    if (m_hasFields)
        m_fields = head.sliced(startEnd + 1).toByteArray();
    if (m_fieldLines == FieldLines::Refuse) {
        QByteArrayView line;
        for (qsizetype pos = 0; nextLine(pos, line);) {
            const qsizetype colon = line.indexOf(':');
            if (colon <= 0 || !isToken(line.first(colon)))
                return fail(Status::Malformed, QStringLiteral("malformed header line"));
        }
    }
    m_status = Status::Complete;
    return m_status;
}

bool HeadParser::nextLine(qsizetype &pos, QByteArrayView &line) const {
    if (!m_hasFields || pos > m_fields.size())
        return false;
    qsizetype eol = m_fields.indexOf('\n', pos);
    if (eol < 0)
        eol = m_fields.size();
    line = QByteArrayView(m_fields).sliced(pos, eol - pos);
    if (line.endsWith('\r'))
        line.chop(1);
    pos = eol + 1;
    return true;
}

bool HeadParser::nextField(qsizetype &pos, QByteArrayView &name, QByteArrayView &value) const {
    if (m_status != Status::Complete)
        return false;
    // A line that is not a field was refused by parse() (FieldLines::Refuse), or is skipped here.
    QByteArrayView line;
    while (nextLine(pos, line)) {
        const qsizetype colon = line.indexOf(':');
        if (colon <= 0)
            continue;
        name = line.first(colon).trimmed();
        value = line.sliced(colon + 1).trimmed();
        return true;
    }
    return false;
}

const HeaderList &HeadParser::headers() const {
    if (!m_headersMade && m_status == Status::Complete) {
        m_headersMade = true;
        // std::count, not QByteArray::count(char): Qt 6.4's walks a byte at a time (4 k for an SDK's head).
        m_headers.reserve(std::max<qsizetype>(8, std::count(m_fields.cbegin(), m_fields.cend(), '\n') + 1));
        QByteArrayView name;
        QByteArrayView value;
        for (qsizetype pos = 0; nextField(pos, name, value);)
            m_headers.append(qMakePair(name.toByteArray(), value.toByteArray()));
    }
    return m_headers;
}

} // namespace sw::http
