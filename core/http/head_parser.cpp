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
    // A CR is only the first half of a line end (RFC 9112 2.2). A head whose lines end in a bare CR
    // has no line end the search above sees: its "empty line" was found in the body (an event
    // stream's blank line), and the head's fields and the first event were read as one start line,
    // which a status check of its first 12 bytes took for a good answer missing its first words
    // (probe T2 F4). A bare CR inside a field is refused as well: what reads it after us may end the
    // line there. (A listener reads each field's control bytes itself, and answers in the client's
    // format, naming the header.)
    for (qsizetype cr = m_fieldLines == FieldLines::Skip ? head.indexOf('\r') : -1; cr >= 0;
         cr = head.indexOf('\r', cr + 1)) {
        if (cr + 1 < head.size() && head.at(cr + 1) != '\n')
            return fail(Status::Malformed, QStringLiteral("a bare CR in the head"));
    }
    const qsizetype startEnd = head.indexOf('\n');
    QByteArrayView startLine = startEnd < 0 ? head : head.first(startEnd);
    if (startLine.endsWith('\r'))
        startLine.chop(1);
    m_startLine = startLine.toByteArray();
    m_hasFields = startEnd >= 0;
    if (m_hasFields) {
        m_fields = head.sliced(startEnd + 1).toByteArray();
        if (m_fieldLines == FieldLines::Skip && hasFoldedLine(m_fields))
            unfold();
    }
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

bool HeadParser::hasFoldedLine(QByteArrayView fields) {
    const auto isBlank = [](char c) { return c == ' ' || c == '\t'; };
    if (!fields.isEmpty() && isBlank(fields.front()))
        return true;
    for (qsizetype lf = fields.indexOf('\n'); lf >= 0; lf = fields.indexOf('\n', lf + 1)) {
        if (lf + 1 < fields.size() && isBlank(fields.at(lf + 1)))
            return true;
    }
    return false;
}

void HeadParser::unfold() {
    // obs-fold (RFC 9112 5.2): a line that begins with a space or a tab continues the field before
    // it. A client reading an answer replaces the fold with a space; read as a field of its own, a
    // folded "Content-Encoding: gzip" or "Content-Length: 7" once made a good answer unreadable
    // and marked its host (probe T2 F2). Whitespace lines before the first field continue nothing
    // and are dropped (RFC 9112 2.2).
    QByteArray unfolded;
    unfolded.reserve(m_fields.size());
    QByteArrayView line;
    for (qsizetype pos = 0; nextLine(pos, line);) {
        const bool continuation = !line.isEmpty() && (line.front() == ' ' || line.front() == '\t');
        if (!continuation) {
            if (!unfolded.isEmpty())
                unfolded.append('\n');
            unfolded.append(line);
        } else if (!unfolded.isEmpty()) {
            unfolded.append(' ');
            unfolded.append(line.trimmed());
        }
    }
    m_fields = unfolded;
    m_hasFields = !m_fields.isEmpty();
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
