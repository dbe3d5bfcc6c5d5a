#pragma once
// Incremental HTTP/1.1 response parser for the socket transport: status line,
// headers, then a body framed by Content-Length, chunked encoding or the
// connection closing. 1xx interim responses are skipped.

#include "upstream/http_types.h"

#include <QByteArray>

namespace sw::upstream {

class Http1ResponseParser {
public:
    enum class State { Head, Body, Done, Error };

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
    int status() const { return m_status; }
    const HeaderList &headers() const { return m_headers; }
    bool keepAlive() const { return m_keepAlive; }
    QByteArray leftover() const { return m_buffer; } // bytes after the end of the response
    QString errorString() const { return m_error; }

private:
    bool parseHead(Output &out);
    void parseBody(Output &out);
    void fail(const QString &why);

    QByteArray m_buffer;
    State m_state = State::Head;
    bool m_headRequest = false;
    int m_status = 0;
    HeaderList m_headers;
    bool m_keepAlive = true;
    enum class Framing { Length, Chunked, UntilClose, None } m_framing = Framing::None;
    qint64 m_remaining = 0; // Length: body bytes left; Chunked: bytes left in chunk
    enum class ChunkStep { Size, Data, DataEnd, Trailer } m_chunkStep = ChunkStep::Size;
    QString m_error;
};

} // namespace sw::upstream
