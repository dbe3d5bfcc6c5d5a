#include "core/upstream/http1_response_parser.h"

namespace sw::upstream {

using http::BodyDecoder;
using http::HeadParser;

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
    if (m_state == State::Body && m_body.finishOnClose())
        m_state = State::Done;
    return m_state == State::Done;
}

void Http1ResponseParser::fail(Failure failure, const QString &why) {
    m_state = State::Error;
    m_failure = failure;
    m_error = why;
    m_buffer.clear();
}

bool Http1ResponseParser::parseHead(Output &out) {
    switch (m_head.parse(m_buffer)) {
    case HeadParser::Status::Incomplete:
        return false;
    case HeadParser::Status::TooLarge:
        fail(Failure::TooLarge, QStringLiteral("response %1").arg(m_head.errorString()));
        return false;
    case HeadParser::Status::Malformed: // not with FieldLines::Skip
        fail(Failure::Malformed, m_head.errorString());
        return false;
    case HeadParser::Status::Complete:
        break;
    }
    const QByteArray statusLine = m_head.startLine();
    const HeaderList headers = m_head.headers();
    m_buffer.remove(0, m_head.headBytes());
    m_head.reset();
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
    if (status >= 100 && status < 200 && status != 101)
        return true; // interim (100 Continue, 103 Early Hints): the real response follows

    m_status = status;
    m_headers = headers;
    const QByteArray connection = headerValue(headers, "connection").toLower();
    m_keepAlive = statusLine.startsWith("HTTP/1.1") ? !connection.contains("close") : connection.contains("keep-alive");
    const QByteArray te = headerValue(headers, "transfer-encoding").toLower();
    const QByteArray cl = headerValue(headers, "content-length");
    BodyDecoder::Limits limits;
    limits.maxLineBytes = kMaxLineBytes;
    limits.maxTrailerBytes = kMaxHeadBytes;
    if (m_headRequest || status == 204 || status == 304) {
        m_body.start(BodyDecoder::Framing::None);
    } else if (te.contains("chunked")) {
        m_body.start(BodyDecoder::Framing::Chunked, 0, limits);
    } else if (!cl.isEmpty()) {
        const qint64 length = cl.trimmed().toLongLong(&ok);
        if (!ok || length < 0) {
            fail(Failure::Malformed, QStringLiteral("malformed content-length"));
            return false;
        }
        m_body.start(BodyDecoder::Framing::Length, length);
    } else {
        m_body.start(BodyDecoder::Framing::UntilClose);
        m_keepAlive = false;
    }
    m_state = m_body.done() ? State::Done : State::Body;
    out.headComplete = true;
    return true;
}

void Http1ResponseParser::parseBody(Output &out) {
    const qsizetype used = m_body.feed(m_buffer, &out.body);
    switch (m_body.status()) {
    case BodyDecoder::Status::Reading:
        break;
    case BodyDecoder::Status::Done:
        m_state = State::Done;
        break;
    case BodyDecoder::Status::TooLarge:
    case BodyDecoder::Status::BodyTooLarge:
        fail(Failure::TooLarge, m_body.errorString());
        return;
    case BodyDecoder::Status::Malformed:
    case BodyDecoder::Status::TrailerRefused:
        fail(Failure::Malformed, m_body.errorString());
        return;
    }
    m_buffer.remove(0, used);
}

} // namespace sw::upstream
