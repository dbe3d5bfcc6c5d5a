#pragma once
// Incremental HTTP/1.1 response parser for the socket transport: status line,
// headers, then a body framed by Content-Length, chunked encoding or the
// connection closing. 1xx interim responses are skipped. The framing itself is
// core/http's (HeadParser, BodyDecoder); this reads a response's meaning into it.
//
// The upstream is not trusted to be well-behaved: a line (status, header,
// chunk size, trailer) longer than kMaxLineBytes or a head longer than
// kMaxHeadBytes ends the parse as TooLarge instead of growing without bound.
// Body bytes are never held: each feed returns what it decoded.

#include "core/http/body_decoder.h"
#include "core/http/head_parser.h"
#include "core/upstream/http_types.h"

#include <QByteArray>

namespace sw::upstream {

class Http1ResponseParser {
public:
    enum class State { Head, Body, Done, Error };
    enum class Failure { None, Malformed, TooLarge };

    static constexpr qsizetype kMaxLineBytes = 64 * 1024;
    static constexpr qsizetype kMaxHeadBytes = 64 * 1024; // status line and every header, with line ends

    struct Output {
        bool headComplete = false; // status() and headers() became valid during this feed
        QByteArray body;           // decoded body bytes from this feed
        bool done = false;         // the response ended during this feed
    };

    // `headRequest`: a response to HEAD has no body whatever its headers say.
    explicit Http1ResponseParser(bool headRequest = false) : m_headRequest(headRequest) {}

    Output feed(QByteArrayView bytes);
    // The peer closed the connection: ends a close-delimited body; true when the
    // response is then complete.
    bool finishOnClose();

    State state() const { return m_state; }
    Failure failure() const { return m_failure; }
    int status() const { return m_status; }
    const HeaderList &headers() const { return m_headers; }
    bool keepAlive() const { return m_keepAlive; }
    // The body ends at a known point (Content-Length or chunked), not at the connection's close.
    bool selfDelimited() const {
        return m_body.framing() == http::BodyDecoder::Framing::Length ||
               m_body.framing() == http::BodyDecoder::Framing::Chunked;
    }
    QByteArray leftover() const { return m_buffer; } // bytes after the end of the response
    QString errorString() const { return m_error; }
    // The failure is in what a whole, well-formed head says (an HTTP/2 status line, a compressed
    // 2xx body, Content-Lengths that disagree): the server answered, and status() and headers()
    // hold its answer. Asked again, it answers the same.
    bool answered() const { return m_answered; }
    // Whether the last of a Transfer-Encoding's codings (trimmed) is chunked, in any case ("gzip, Chunked").
    static bool chunkedIsLast(QByteArrayView codings);
    // A Transfer-Encoding's codings without a last "chunked" ("gzip" of "gzip, chunked"); empty for
    // chunked or identity alone.
    static QByteArrayView transferCodingsBeforeChunked(QByteArrayView te);

private:
    // Parses a head at the front of `input`; on success advances `pos` past it.
    bool parseHead(QByteArrayView input, qsizetype &pos, Output &out);
    // Returns how many bytes of `input` were the body's.
    qsizetype parseBody(QByteArrayView input, Output &out);
    void fail(Failure failure, const QString &why);
    void failAnswered(const QString &why);

    QByteArray m_buffer;
    State m_state = State::Head;
    Failure m_failure = Failure::None;
    bool m_headRequest = false;
    int m_status = 0;
    HeaderList m_headers;
    bool m_keepAlive = true;
    bool m_answered = false;
    http::HeadParser m_head{kMaxHeadBytes, http::HeadParser::FieldLines::Skip};
    http::BodyDecoder m_body;
    QString m_error;
};

} // namespace sw::upstream
