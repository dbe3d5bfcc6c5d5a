#pragma once
#include <QByteArray>
#include <QList>

namespace sw::upstream {

struct SseEvent {
    QByteArray event; // "" when no event: line
    QByteArray data;  // data lines joined with \n
};

// The event as SSE text again: its "event:" line, one "data:" line per data line, a blank line.
QByteArray sseText(const SseEvent &e);

// Incremental Server-Sent Events parser (WHATWG rules): any chunk boundaries,
// LF / CR / CRLF line ends, comment lines skipped, multi-line data joined.
// An "id" line is read and dropped like "retry": the gateway never reconnects
// with Last-Event-ID and no client of it reads an upstream's event ids, and the
// last id, which WHATWG keeps for the rest of the stream, held one of up to
// 8 MiB for as long as the stream went on (probe AA2 F1).
//
// One event (its unfinished line plus the data and type gathered so far)
// may hold at most kMaxEventBytes: past that the reader overflows, drops what
// it held and reads nothing more. The caller ends the attempt as a transport
// failure (TransportError::TooLarge): an upstream must not grow our memory by
// never ending a line or an event.
class SseReader {
public:
    static constexpr qsizetype kMaxEventBytes = 8 * 1024 * 1024;

    QList<SseEvent> feed(QByteArrayView chunk);
    QList<SseEvent> finish(); // dispatches a last event not followed by a blank line
    bool overflowed() const { return m_overflowed; }
    // Bytes of an event still arriving (its data so far and an unfinished field line; not a comment).
    qsizetype pendingEventBytes() const {
        return m_current.data.size() + m_current.event.size() + (m_buffer.startsWith(':') ? 0 : m_buffer.size());
    }
    // Everything the reader holds between feeds: the event still arriving and an unfinished line,
    // a comment's too. At most kMaxEventBytes.
    qsizetype heldBytes() const { return m_buffer.size() + m_current.data.size() + m_current.event.size(); }

private:
    void overflow();
    void processLine(QByteArrayView line, QList<SseEvent> &out);
    QByteArray m_buffer;
    SseEvent m_current;
    bool m_hasData = false;
    bool m_lastWasCr = false;
    bool m_sawFirstLine = false; // added: strip a leading BOM once
    bool m_overflowed = false;
};

} // namespace sw::upstream
