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
    m_headers.clear();
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
    m_headers.reserve(std::max<qsizetype>(8, head.count('\n'))); // one allocation for the usual head
    qsizetype start = 0;
    bool first = true;
    while (start <= head.size()) {
        qsizetype eol = head.indexOf('\n', start);
        if (eol < 0)
            eol = head.size();
        QByteArrayView line = head.sliced(start, eol - start);
        start = eol + 1;
        if (line.endsWith('\r'))
            line.chop(1);
        if (first) {
            m_startLine = line.toByteArray();
            first = false;
            continue;
        }
        const qsizetype colon = line.indexOf(':');
        if (m_fieldLines == FieldLines::Refuse) {
            if (colon <= 0 || !isToken(line.first(colon)))
                return fail(Status::Malformed, QStringLiteral("malformed header line"));
        } else if (colon <= 0) {
            continue;
        }
        m_headers.append(
            qMakePair(line.first(colon).trimmed().toByteArray(), line.sliced(colon + 1).trimmed().toByteArray()));
    }
    m_status = Status::Complete;
    return m_status;
}

} // namespace sw::http
