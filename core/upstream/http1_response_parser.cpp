#include "upstream/http1_response_parser.h"

namespace sw::upstream {

Http1ResponseParser::Output Http1ResponseParser::feed(QByteArrayView bytes) {
    Output out;
    if (m_state == State::Error)
        return out; // nothing after a failure is read; the connection is closed
    m_buffer.append(bytes.data(), bytes.size());
    if (m_state == State::Done)
        return out; // pipelined or stray bytes: kept as leftover, which makes the connection not reusable
    while (m_state == State::Head) {
        if (!parseHead(out))
            return out;
    }
    if (m_state == State::Body)
        parseBody(out);
    out.done = m_state == State::Done;
    return out;
}

bool Http1ResponseParser::finishOnClose() {
    if (m_state == State::Body && m_framing == Framing::UntilClose) {
        m_state = State::Done;
        return true;
    }
    return m_state == State::Done;
}

void Http1ResponseParser::fail(Failure failure, const QString &why) {
    m_state = State::Error;
    m_failure = failure;
    m_error = why;
    m_buffer.clear();
}

bool Http1ResponseParser::takeLine(qsizetype &pos, QByteArrayView &line, const char *what) {
    const qsizetype eol = m_buffer.indexOf('\n', pos);
    if (eol < 0) {
        if (m_buffer.size() - pos > kMaxLineBytes)
            fail(Failure::TooLarge,
                 QStringLiteral("%1 longer than %2 bytes").arg(QLatin1String(what)).arg(kMaxLineBytes));
        return false;
    }
    if (eol - pos > kMaxLineBytes) {
        fail(Failure::TooLarge, QStringLiteral("%1 longer than %2 bytes").arg(QLatin1String(what)).arg(kMaxLineBytes));
        return false;
    }
    line = QByteArrayView(m_buffer).sliced(pos, eol - pos);
    if (line.endsWith('\r'))
        line.chop(1);
    pos = eol + 1;
    return true;
}

bool Http1ResponseParser::parseHead(Output &out) {
    // The head ends at its first empty line. Lines end in CRLF, but servers that end
    // them in a bare LF exist (RFC 9112 lets a recipient accept that), so both count.
    qsizetype end = -1;
    qsizetype bodyStart = 0;
    for (qsizetype i = m_buffer.indexOf('\n', std::max<qsizetype>(0, m_headScanned - 2)); i >= 0;
         i = m_buffer.indexOf('\n', i + 1)) {
        if (i + 1 < m_buffer.size() && m_buffer.at(i + 1) == '\n') {
            end = i;
            bodyStart = i + 2;
            break;
        }
        if (i + 2 < m_buffer.size() && m_buffer.at(i + 1) == '\r' && m_buffer.at(i + 2) == '\n') {
            end = i;
            bodyStart = i + 3;
            break;
        }
    }
    if (end < 0 || end > kMaxHeadBytes) {
        m_headScanned = m_buffer.size();
        if (m_buffer.size() > kMaxHeadBytes)
            fail(Failure::TooLarge, QStringLiteral("response head longer than %1 bytes").arg(kMaxHeadBytes));
        return false;
    }
    const QByteArray head = m_buffer.left(end);
    m_buffer.remove(0, bodyStart);
    m_headScanned = 0;
    const QList<QByteArray> lines = head.split('\n');
    QByteArray statusLine = lines.value(0);
    if (statusLine.endsWith('\r'))
        statusLine.chop(1);
    // "HTTP/1.1 200 OK"
    if (!statusLine.startsWith("HTTP/1.") || statusLine.size() < 12 || statusLine.at(8) != ' ') {
        fail(Failure::Malformed, QStringLiteral("malformed status line"));
        return false;
    }
    bool ok = false;
    const int status = statusLine.mid(9, 3).toInt(&ok);
    if (!ok || status < 100 || status > 999) {
        fail(Failure::Malformed, QStringLiteral("malformed status code"));
        return false;
    }
    HeaderList headers;
    for (qsizetype i = 1; i < lines.size(); ++i) {
        QByteArrayView l = lines[i];
        if (l.endsWith('\r'))
            l.chop(1);
        const qsizetype colon = l.indexOf(':');
        if (colon <= 0)
            continue;
        headers.append(qMakePair(l.first(colon).trimmed().toByteArray(), l.sliced(colon + 1).trimmed().toByteArray()));
    }
    if (status >= 100 && status < 200 && status != 101)
        return true; // interim (100 Continue, 103 Early Hints): the real response follows

    m_status = status;
    m_headers = headers;
    const QByteArray connection = headerValue(headers, "connection").toLower();
    m_keepAlive = statusLine.startsWith("HTTP/1.1") ? !connection.contains("close") : connection.contains("keep-alive");
    const QByteArray te = headerValue(headers, "transfer-encoding").toLower();
    const QByteArray cl = headerValue(headers, "content-length");
    if (m_headRequest || status == 204 || status == 304) {
        m_framing = Framing::None;
    } else if (te.contains("chunked")) {
        m_framing = Framing::Chunked;
        m_chunkStep = ChunkStep::Size;
    } else if (!cl.isEmpty()) {
        m_remaining = cl.trimmed().toLongLong(&ok);
        if (!ok || m_remaining < 0) {
            fail(Failure::Malformed, QStringLiteral("malformed content-length"));
            return false;
        }
        m_framing = m_remaining == 0 ? Framing::None : Framing::Length;
    } else {
        m_framing = Framing::UntilClose;
        m_keepAlive = false;
    }
    m_state = m_framing == Framing::None ? State::Done : State::Body;
    out.headComplete = true;
    return true;
}

void Http1ResponseParser::parseBody(Output &out) {
    switch (m_framing) {
    case Framing::UntilClose:
        out.body += m_buffer;
        m_buffer.clear();
        return;
    case Framing::Length: {
        const qint64 take = std::min<qint64>(m_remaining, m_buffer.size());
        out.body += m_buffer.left(take);
        m_buffer.remove(0, take);
        m_remaining -= take;
        if (m_remaining == 0)
            m_state = State::Done;
        return;
    }
    case Framing::Chunked:
        break;
    case Framing::None:
        m_state = State::Done;
        return;
    }
    qsizetype pos = 0;
    for (;;) {
        if (m_chunkStep == ChunkStep::Size) {
            QByteArrayView sizeText;
            if (!takeLine(pos, sizeText, "chunk size line"))
                break;
            if (const qsizetype semi = sizeText.indexOf(';'); semi >= 0)
                sizeText = sizeText.first(semi); // chunk extensions are ignored
            sizeText = sizeText.trimmed();
            bool ok = false;
            // At most 15 hex digits: a size that does not fit a qint64 is not a size.
            m_remaining = sizeText.size() <= 15 ? sizeText.toLongLong(&ok, 16) : -1;
            if (!ok || m_remaining < 0) {
                fail(Failure::Malformed, QStringLiteral("malformed chunk size"));
                return;
            }
            m_chunkStep = m_remaining == 0 ? ChunkStep::Trailer : ChunkStep::Data;
            m_trailerBytes = 0;
        } else if (m_chunkStep == ChunkStep::Data) {
            const qint64 take = std::min<qint64>(m_remaining, m_buffer.size() - pos);
            if (take == 0)
                break;
            out.body.append(m_buffer.constData() + pos, take);
            pos += take;
            m_remaining -= take;
            if (m_remaining == 0)
                m_chunkStep = ChunkStep::DataEnd;
        } else if (m_chunkStep == ChunkStep::DataEnd) {
            const qsizetype avail = m_buffer.size() - pos;
            if (avail < 1)
                break;
            if (m_buffer.at(pos) == '\n') {
                pos += 1;
            } else if (m_buffer.at(pos) == '\r') {
                if (avail < 2)
                    break;
                if (m_buffer.at(pos + 1) != '\n') {
                    fail(Failure::Malformed, QStringLiteral("malformed chunk end"));
                    return;
                }
                pos += 2;
            } else {
                fail(Failure::Malformed, QStringLiteral("malformed chunk end"));
                return;
            }
            m_chunkStep = ChunkStep::Size;
        } else { // Trailer: lines until an empty one, all of them within the head limit
            const qsizetype before = pos;
            QByteArrayView line;
            if (!takeLine(pos, line, "trailer line"))
                break;
            m_trailerBytes += pos - before;
            if (m_trailerBytes > kMaxHeadBytes) {
                fail(Failure::TooLarge, QStringLiteral("trailers longer than %1 bytes").arg(kMaxHeadBytes));
                return;
            }
            if (line.isEmpty()) {
                m_state = State::Done;
                break;
            }
        }
        if (m_state == State::Error)
            return;
    }
    if (m_state == State::Error)
        return;
    m_buffer.remove(0, pos);
}

} // namespace sw::upstream
