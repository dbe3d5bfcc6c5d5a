#pragma once
#include <QByteArray>
#include <QList>

namespace sw::upstream {

struct SseEvent {
    QByteArray event; // "" when no event: line
    QByteArray data;  // data lines joined with \n
    QByteArray id;
};

// Incremental Server-Sent Events parser (WHATWG rules): any chunk boundaries,
// LF / CR / CRLF line ends, comment lines skipped, multi-line data joined.
class SseReader {
public:
    QList<SseEvent> feed(QByteArrayView chunk);
    QList<SseEvent> finish(); // dispatches a last event not followed by a blank line
private:
    void processLine(QByteArrayView line, QList<SseEvent> &out);
    QByteArray m_buffer;
    SseEvent m_current;
    bool m_hasData = false;
    bool m_lastWasCr = false;
    bool m_sawFirstLine = false; // added: strip a leading BOM once
};

} // namespace sw::upstream
