#include "upstream/http1_response_parser.h"

namespace sw::upstream {

namespace {
constexpr qsizetype kMaxHeadBytes = 256 * 1024; // a head larger than this is not an HTTP server we want
}

Http1ResponseParser::Output Http1ResponseParser::feed(QByteArrayView bytes) {
    Output out;
    if (m_state == State::Error || m_state == State::Done) {
        m_buffer.append(bytes.data(), bytes.size());
        return out;
    }
    m_buffer.append(bytes.data(), bytes.size());
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

void Http1ResponseParser::fail(const QString &why) {
    m_state = State::Error;
    m_error = why;
}

bool Http1ResponseParser::parseHead(Output &out) {
    const qsizetype end = m_buffer.indexOf("\r\n\r\n");
    if (end < 0) {
        if (m_buffer.size() > kMaxHeadBytes)
            fail(QStringLiteral("response head too large"));
        return false;
    }
    const QByteArray head = m_buffer.left(end);
    m_buffer.remove(0, end + 4);
    const qsizetype firstEol = head.indexOf("\r\n");
    const QByteArray statusLine = firstEol < 0 ? head : head.left(firstEol);
    // "HTTP/1.1 200 OK"
    if (!statusLine.startsWith("HTTP/1.") || statusLine.size() < 12) {
        fail(QStringLiteral("malformed status line"));
        return false;
    }
    bool ok = false;
    const int status = statusLine.mid(9, 3).toInt(&ok);
    if (!ok || status < 100 || status > 999) {
        fail(QStringLiteral("malformed status code"));
        return false;
    }
    HeaderList headers;
    if (firstEol >= 0) {
        for (const QByteArray &line : head.mid(firstEol + 2).split('\n')) {
            const QByteArray l = line.endsWith('\r') ? line.chopped(1) : line;
            const qsizetype colon = l.indexOf(':');
            if (colon <= 0)
                continue;
            headers.append(qMakePair(l.left(colon).trimmed(), l.mid(colon + 1).trimmed()));
        }
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
            fail(QStringLiteral("malformed content-length"));
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
            const qsizetype eol = m_buffer.indexOf("\r\n", pos);
            if (eol < 0)
                break;
            QByteArrayView sizeText = QByteArrayView(m_buffer).sliced(pos, eol - pos);
            if (const qsizetype semi = sizeText.indexOf(';'); semi >= 0)
                sizeText = sizeText.first(semi);
            bool ok = false;
            m_remaining = sizeText.trimmed().toLongLong(&ok, 16);
            if (!ok || m_remaining < 0) {
                fail(QStringLiteral("malformed chunk size"));
                return;
            }
            pos = eol + 2;
            m_chunkStep = m_remaining == 0 ? ChunkStep::Trailer : ChunkStep::Data;
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
            if (m_buffer.size() - pos < 2)
                break;
            if (m_buffer.at(pos) != '\r' || m_buffer.at(pos + 1) != '\n') {
                fail(QStringLiteral("malformed chunk end"));
                return;
            }
            pos += 2;
            m_chunkStep = ChunkStep::Size;
        } else { // Trailer: lines until an empty one
            const qsizetype eol = m_buffer.indexOf("\r\n", pos);
            if (eol < 0)
                break;
            const bool empty = eol == pos;
            pos = eol + 2;
            if (empty) {
                m_state = State::Done;
                break;
            }
        }
    }
    m_buffer.remove(0, pos);
}

} // namespace sw::upstream
