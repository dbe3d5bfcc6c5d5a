#include "core/upstream/http1_response_parser.h"

namespace sw::upstream {

using http::BodyDecoder;
using http::HeadParser;

namespace {
// `token` is lower case; ASCII letters of `value` match either case (as QByteArray::toLower() folds them).
bool containsIgnoringCase(QByteArrayView value, QByteArrayView token) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    for (qsizetype i = 0; i + token.size() <= value.size(); ++i) {
        qsizetype j = 0;
        while (j < token.size() && lower(value[i + j]) == token[j])
            ++j;
        if (j == token.size())
            return true;
    }
    return false;
}
} // namespace

Http1ResponseParser::Output Http1ResponseParser::feed(QByteArrayView bytes) {
    Output out;
    if (m_state == State::Error)
        return out; // nothing after a failure is read; the connection is closed
    if (m_state == State::Done) {
        m_buffer.append(bytes.data(), bytes.size());
        return out; // pipelined or stray bytes: kept as leftover, which makes the connection not reusable
    }
    // Bytes are read where they lie; only an unfinished head is kept between feeds (m_buffer), so the
    // body of a response never goes through a copy of its own.
    const bool buffered = !m_buffer.isEmpty();
    if (buffered)
        m_buffer.append(bytes.data(), bytes.size());
    const QByteArrayView input = buffered ? QByteArrayView(m_buffer) : bytes;
    qsizetype pos = 0;
    while (m_state == State::Head) {
        if (!parseHead(input.sliced(pos), pos, out))
            break;
    }
    if (m_state == State::Body)
        pos += parseBody(input.sliced(pos), out);
    if (m_state == State::Error)
        return out; // fail() dropped the buffer
    if (buffered)
        m_buffer.remove(0, pos);
    else if (pos < input.size())
        m_buffer = input.sliced(pos).toByteArray();
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

void Http1ResponseParser::failAnswered(const QString &why) {
    fail(Failure::Malformed, why);
    m_answered = true;
}

bool Http1ResponseParser::chunkedIsLast(QByteArrayView codings) {
    if (codings.size() < 7 || qstrnicmp(codings.last(7).data(), 7, "chunked", 7) != 0)
        return false;
    if (codings.size() == 7)
        return true;
    const char before = codings[codings.size() - 8];
    return before == ',' || before == ' ' || before == '\t';
}

QByteArrayView Http1ResponseParser::transferCodingsBeforeChunked(QByteArrayView te) {
    QByteArrayView codings = te.trimmed();
    if (chunkedIsLast(codings))
        codings = codings.chopped(7).trimmed();
    while (codings.endsWith(','))
        codings = codings.chopped(1).trimmed();
    // "identity" was a transfer coding once (RFC 2616) and changes nothing.
    if (codings.compare("identity", Qt::CaseInsensitive) == 0)
        return {};
    return codings;
}

bool Http1ResponseParser::parseHead(QByteArrayView input, qsizetype &pos, Output &out) {
    switch (m_head.parse(input)) {
    case HeadParser::Status::Incomplete:
        return false;
    case HeadParser::Status::TooLarge:
        fail(Failure::TooLarge, QStringLiteral("response %1").arg(m_head.errorString()));
        return false;
    case HeadParser::Status::Malformed: // a bare CR
        fail(Failure::Malformed, m_head.errorString());
        return false;
    case HeadParser::Status::Complete:
        break;
    }
    const QByteArray statusLine = m_head.startLine();
    const HeaderList headers = m_head.headers();
    pos += m_head.headBytes();
    m_head.reset();
    // "HTTP/1.1 200 OK". An "HTTP/2 200" line is a server that answered in words this parser does
    // not read (the request was HTTP/1.1): an answer all the same, which asking again gets again.
    const bool http2 = statusLine.startsWith("HTTP/2 ") || statusLine.startsWith("HTTP/3 ");
    const qsizetype codeAt = http2 ? 7 : 9;
    if (!(http2 || (statusLine.startsWith("HTTP/1.") && statusLine.size() >= 12 && statusLine.at(8) == ' ')) ||
        statusLine.size() < codeAt + 3) {
        fail(Failure::Malformed, QStringLiteral("malformed status line"));
        return false;
    }
    int status = 0;
    for (qsizetype i = codeAt; i < codeAt + 3; ++i) {
        const char c = statusLine.at(i);
        if (c < '0' || c > '9') {
            status = -1;
            break;
        }
        status = status * 10 + (c - '0');
    }
    if (status < 100 || status > 999) {
        fail(Failure::Malformed, QStringLiteral("malformed status code"));
        return false;
    }
    if (status == 101) {
        // No request asks for an upgrade: a server that switches anyway is not answering it (its bytes
        // would be read as the answer and end the chain). A broken host, as a garbled answer is.
        fail(Failure::Malformed,
             QStringLiteral("HTTP 101 Switching Protocols, though the request asked for no upgrade"));
        return false;
    }
    if (http2) {
        const QString why = QStringLiteral("HTTP %1 in %2, though the request was HTTP/1.1")
                                .arg(status)
                                .arg(QString::fromLatin1(statusLine.first(6)));
        if (status < 200) {
            fail(Failure::Malformed, why);
        } else {
            m_status = status;
            m_headers = headers;
            failAnswered(why);
        }
        return false;
    }
    if (status >= 100 && status < 200)
        return true; // interim (100 Continue, 103 Early Hints): the real response follows

    m_status = status;
    m_headers = headers;
    // The first of each field decides (as headerValue() reads them), compared without case.
    // Content-Length is the exception: every value of every such field must agree (RFC 9112 6.3).
    // Read by the first, a body longer than it left its tail on a pooled connection, where the next
    // request, another tenant's, took it for its own answer (probe E3 1): a conflict is no answer.
    const QByteArray *connection = nullptr;
    const QByteArray *te = nullptr;
    const QByteArray *cl = nullptr;
    const QByteArray *encoding = nullptr;
    std::optional<QByteArrayView> length;
    bool lengthsDisagree = false;
    // The same number however written ("0261" and "261"); what is no number stays text.
    const auto same = [](QByteArrayView a, QByteArrayView b) {
        bool okA = false, okB = false;
        const qint64 x = a.toLongLong(&okA), y = b.toLongLong(&okB);
        return okA && okB ? x == y : a == b;
    };
    for (const auto &h : m_headers) {
        if (!connection && http::sameName(h.first, "connection"))
            connection = &h.second;
        else if (!te && http::sameName(h.first, "transfer-encoding"))
            te = &h.second;
        else if (http::sameName(h.first, "content-length")) {
            if (!cl)
                cl = &h.second;
            QByteArrayView rest(h.second);
            while (true) {
                const qsizetype comma = rest.indexOf(',');
                const QByteArrayView v = (comma < 0 ? rest : rest.first(comma)).trimmed();
                lengthsDisagree = lengthsDisagree || (length && !same(*length, v));
                length = v;
                if (comma < 0)
                    break;
                rest = rest.sliced(comma + 1);
            }
        } else if (!encoding && http::sameName(h.first, "content-encoding"))
            encoding = &h.second;
    }
    if (lengthsDisagree) {
        failAnswered(QStringLiteral("HTTP %1 with Content-Length values that disagree").arg(status));
        return false;
    }
    // Every request says Accept-Encoding: identity (this parser decodes no gzip): a compressed body
    // read as text would be taken for a stream that broke off. Say what it is instead, whether the
    // coding came as a content coding or a transfer coding before chunked ("gzip, chunked": probe T2
    // F1). An error answer keeps its status (its Retry-After, its classification); the reader of
    // error bodies inflates it. "none" is no coding either, though no registry names it: some
    // servers send it for identity.
    if (status >= 200 && status < 300) {
        const QByteArrayView content = encoding ? QByteArrayView(*encoding).trimmed() : QByteArrayView();
        const bool contentCoded = !content.isEmpty() && content.compare("identity", Qt::CaseInsensitive) != 0 &&
                                  content.compare("none", Qt::CaseInsensitive) != 0;
        if (contentCoded || (te && !transferCodingsBeforeChunked(*te).isEmpty())) {
            failAnswered(
                QStringLiteral("HTTP %1 with %2 %3, though the request asked for identity (no compression)")
                    .arg(status)
                    .arg(contentCoded ? QStringLiteral("Content-Encoding") : QStringLiteral("Transfer-Encoding"))
                    .arg(QString::fromLatin1((contentCoded ? *encoding : *te).trimmed().left(64))));
            return false;
        }
    }
    const auto has = [](const QByteArray *value, QByteArrayView token) {
        return value && containsIgnoringCase(*value, token);
    };
    m_keepAlive = statusLine.startsWith("HTTP/1.1") ? !has(connection, "close") : has(connection, "keep-alive");
    BodyDecoder::Limits limits;
    limits.maxLineBytes = kMaxLineBytes;
    limits.maxTrailerBytes = kMaxHeadBytes;
    if (m_headRequest || status == 204 || status == 304) {
        m_body.start(BodyDecoder::Framing::None);
        // No request of the gateway's is answered so (a HEAD's is no chat answer either way): a
        // server that sends one may send the body it says it has not after it, which would wait
        // on a pooled connection for the next request. The connection goes with the answer.
        if (!m_headRequest)
            m_keepAlive = false;
    } else if (const QByteArrayView codings = te ? QByteArrayView(*te).trimmed() : QByteArrayView();
               !codings.isEmpty()) {
        // Transfer-Encoding wins over a Content-Length (RFC 9112 6.3): a body chunked last is read
        // by its chunks, any other coding until the close. A message that carries both framings
        // may be an attempt to split responses, so its connection is never reused.
        if (codings == "chunked" || chunkedIsLast(codings)) {
            m_body.start(BodyDecoder::Framing::Chunked, 0, limits);
            if (cl)
                m_keepAlive = false;
        } else {
            m_body.start(BodyDecoder::Framing::UntilClose);
            m_keepAlive = false;
        }
    } else if (cl && length && !length->isEmpty()) {
        bool ok = false;
        const qint64 bytes = length->toLongLong(&ok); // one value, however often it was repeated
        if (!ok || bytes < 0) {
            fail(Failure::Malformed, QStringLiteral("malformed content-length"));
            return false;
        }
        m_body.start(BodyDecoder::Framing::Length, bytes);
    } else {
        m_body.start(BodyDecoder::Framing::UntilClose);
        m_keepAlive = false;
    }
    m_state = m_body.done() ? State::Done : State::Body;
    out.headComplete = true;
    return true;
}

qsizetype Http1ResponseParser::parseBody(QByteArrayView input, Output &out) {
    if (out.body.isEmpty())
        out.body.reserve(input.size()); // decoded bytes never outnumber the bytes that carry them
    const qsizetype used = m_body.feed(input, &out.body);
    switch (m_body.status()) {
    case BodyDecoder::Status::Reading:
        break;
    case BodyDecoder::Status::Done:
        m_state = State::Done;
        break;
    case BodyDecoder::Status::TooLarge:
    case BodyDecoder::Status::BodyTooLarge:
        fail(Failure::TooLarge, m_body.errorString());
        break;
    case BodyDecoder::Status::Malformed:
    case BodyDecoder::Status::TrailerRefused:
        fail(Failure::Malformed, m_body.errorString());
        break;
    }
    return used;
}

} // namespace sw::upstream
