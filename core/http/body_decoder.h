#pragma once
// The body of one HTTP/1 message, framed by a Content-Length, chunked transfer
// coding, or the connection's close, read incrementally from whatever bytes
// arrive. It says where the body ends in what it is fed (the rest belongs to
// the next message) and never holds body bytes: each feed hands them out, or
// only counts them when the caller does not want them.
//
// The chunked coding is bounded: a chunk-size or trailer line longer than
// maxLineBytes, or trailers longer than maxTrailerBytes together, end the body
// as TooLarge; a size that is not 1 to 15 hex digits (nothing that overflows a
// qint64), or a chunk not followed by its line end, as Malformed. Chunk
// extensions are ignored.

#include <QByteArray>
#include <QByteArrayView>
#include <QString>

namespace sw::http {

struct BodyLimits {
    qsizetype maxLineBytes = 64 * 1024;    // a chunk-size line, a trailer line
    qsizetype maxTrailerBytes = 64 * 1024; // all trailer lines together
    qint64 maxBodyBytes = -1;              // chunked: refused at the size line that would pass it; -1 for none
    bool trailers = true;                  // false: a trailer field is refused (TrailerRefused)
    // true: every chunk line and chunk end must end in CRLF; a bare LF is Malformed (a client's body
    // for Qt's parser, which waits for the CR). An answer's body may use bare LF (RFC 9112 2.2).
    bool crlfOnly = false;
};

class BodyDecoder {
public:
    enum class Framing {
        None,       // no body (a HEAD answer, 204, 304, a request without Content-Length)
        Length,     // Content-Length bytes
        Chunked,    // Transfer-Encoding: chunked
        UntilClose, // everything until the peer closes (an answer with neither)
    };
    enum class Status {
        Reading,
        Done,
        Malformed,
        TooLarge,       // a chunk-size or trailer line, or the trailers, over their limit
        BodyTooLarge,   // a chunk size that would take the body past maxBodyBytes
        TrailerRefused, // a trailer field where trailers are not accepted
    };
    using Limits = BodyLimits;

    BodyDecoder() = default;
    // Starts a body; `length` is the Content-Length for Framing::Length.
    void start(Framing framing, qint64 length = 0, const Limits &limits = Limits());

    // Reads this body from the front of `bytes`; decoded bytes are appended to
    // `*body` when it is non-null. Returns how many bytes of `bytes` were this
    // body's: all of them while it is Reading, fewer when it ended or failed.
    qsizetype feed(QByteArrayView bytes, QByteArray *body = nullptr);
    // The peer closed the connection: ends a close-delimited body. True when the
    // body is then complete.
    bool finishOnClose();

    Framing framing() const { return m_framing; }
    Status status() const { return m_status; }
    bool done() const { return m_status == Status::Done; }
    bool failed() const { return m_status != Status::Reading && m_status != Status::Done; }
    qint64 decodedBytes() const { return m_decoded; }
    QString errorString() const { return m_error; }

private:
    enum class ChunkStep { Size, Data, DataEnd, Trailer };
    qsizetype feedChunked(QByteArrayView bytes, QByteArray *body);
    // Reads one line from bytes[pos...], collecting a line split across feeds in m_line; true when
    // its LF arrived: `*line` is then the line without its CR LF (in `bytes` or in m_line, which the
    // caller clears once it has read the line).
    bool takeLine(QByteArrayView bytes, qsizetype &pos, const char *what, QByteArrayView *line);
    bool sizeLine(QByteArrayView line);
    void fail(Status status, const QString &why);

    Framing m_framing = Framing::None;
    Status m_status = Status::Done;
    Limits m_limits;
    qint64 m_remaining = 0; // Length: body bytes left; Chunked: bytes left in the chunk
    qint64 m_decoded = 0;
    qint64 m_announced = 0; // chunked: the sizes of every chunk so far
    ChunkStep m_step = ChunkStep::Size;
    QByteArray m_line;
    bool m_sawCr = false; // DataEnd: the CR of the chunk's CRLF arrived
    qsizetype m_trailerBytes = 0;
    QString m_error;
};

} // namespace sw::http
