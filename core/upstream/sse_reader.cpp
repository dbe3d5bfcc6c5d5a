#include "core/upstream/sse_reader.h"

#include "core/wire/rapid_json.h"

#include <cstring>

namespace sw::upstream {

// The event as SSE text again ("event:" line, one "data:" line per data line, a blank line), built
// in one allocation: it runs on every passthrough frame.
QByteArray sseText(const SseEvent &e) {
    static constexpr QByteArrayView kEvent("event: ");
    static constexpr QByteArrayView kData("data: ");
    // Lines by memchr: QByteArray::count(char) walks byte by byte (1.5 k instructions on a
    // 200-byte chunk), and a chunk is almost always one line.
    qsizetype lines = 1;
    for (const char *p = e.data.constData(), *end = p + e.data.size();
         (p = static_cast<const char *>(std::memchr(p, '\n', size_t(end - p)))) != nullptr; ++p)
        ++lines;
    QByteArray out;
    out.reserve((e.event.isEmpty() ? 0 : kEvent.size() + e.event.size() + 1) + lines * (kData.size() + 1) +
                e.data.size() + 1);
    if (!e.event.isEmpty()) {
        out.append(kEvent);
        out.append(e.event);
        out.append('\n');
    }
    const char *data = e.data.constData();
    qsizetype start = 0;
    for (;;) {
        const qsizetype eol = e.data.indexOf('\n', start);
        const qsizetype end = eol < 0 ? e.data.size() : eol;
        out.append(kData);
        out.append(data + start, end - start);
        out.append('\n');
        if (eol < 0)
            break;
        start = eol + 1;
    }
    out.append('\n');
    return out;
}

void SseReader::overflow() {
    m_overflowed = true;
    m_buffer = QByteArray();
    m_current = SseEvent();
    m_hasData = false;
}

QList<SseEvent> SseReader::feed(QByteArrayView chunk) {
    QList<SseEvent> out;
    if (chunk.isEmpty() || m_overflowed)
        return out;
    // A CRLF split across chunks: the CR already ended the line, so drop the LF.
    if (m_lastWasCr && chunk.front() == '\n')
        chunk = chunk.sliced(1);
    m_lastWasCr = false;
    if (chunk.isEmpty())
        return out;

    // Lines are read from the chunk where they lie; only an unfinished line is kept (m_buffer) and
    // completed by the next chunk, so a chunk of whole events is never copied.
    const char *data = chunk.data();
    const char *const end = data + chunk.size();
    const char *start = data;
    while (start < end) {
        const auto *lf = static_cast<const char *>(std::memchr(start, '\n', size_t(end - start)));
        const char *const stop = lf ? lf : end;
        const auto *cr = static_cast<const char *>(std::memchr(start, '\r', size_t(stop - start)));
        const char *const eol = cr ? cr : lf;
        if (!eol)
            break;
        if (m_buffer.isEmpty()) {
            processLine(QByteArrayView(start, eol - start), out);
        } else {
            m_buffer.append(start, eol - start);
            processLine(m_buffer, out);
            m_buffer.clear();
        }
        if (m_current.data.size() + m_current.event.size() > kMaxEventBytes) {
            overflow();
            return out; // the events completed before the oversized one still count
        }
        start = eol + 1;
        if (*eol == '\r') {
            if (start < end) {
                if (*start == '\n')
                    ++start;
            } else {
                m_lastWasCr = true;
            }
        }
    }
    if (start < end)
        m_buffer.append(start, end - start);
    if (heldBytes() > kMaxEventBytes)
        overflow();
    return out;
}

QList<SseEvent> SseReader::finish() {
    QList<SseEvent> out;
    if (m_overflowed)
        return out;
    if (!m_buffer.isEmpty()) {
        processLine(m_buffer, out);
        m_buffer.clear();
    }
    processLine({}, out); // the blank line the stream never sent
    m_lastWasCr = false;
    return out;
}

void SseReader::processLine(QByteArrayView line, QList<SseEvent> &out) {
    // The stream may begin with a UTF-8 byte order mark; it is not part of the first field.
    if (!m_sawFirstLine) {
        m_sawFirstLine = true;
        if (line.startsWith("\xEF\xBB\xBF"))
            line = line.sliced(3);
    }
    if (line.isEmpty()) {
        if (m_hasData) {
            SseEvent ev;
            ev.event = std::move(m_current.event);
            ev.data = std::move(m_current.data);
            // WHATWG reads the stream as UTF-8 with replacement: a byte that is not UTF-8 (one
            // character's bytes split across two deltas by a llama.cpp-style server) becomes U+FFFD,
            // as every SDK reads it, and the rest of the event stays. Kept raw, it made the whole
            // event unreadable to the JSON parser, and so dropped with its valid text (probe H2 1).
            if (!wire::rj::isUtf8(ev.data))
                ev.data = wire::rj::repairedUtf8(ev.data);
            if (!wire::rj::isUtf8(ev.event))
                ev.event = wire::rj::repairedUtf8(ev.event);
            if (out.capacity() == 0)
                out.reserve(8); // a chunk often holds several events: no regrowth (and moves) for each
            out.append(std::move(ev));
        }
        m_current.event = QByteArray();
        m_current.data = QByteArray();
        m_hasData = false;
        return;
    }
    if (line.front() == ':')
        return; // comment, e.g. keepalive
    QByteArrayView field = line;
    QByteArrayView value;
    if (const qsizetype colon = line.indexOf(':'); colon >= 0) {
        field = line.first(colon);
        value = line.sliced(colon + 1);
        if (!value.isEmpty() && value.front() == ' ')
            value = value.sliced(1);
    }
    if (field == "data") {
        if (m_hasData) {
            m_current.data.append('\n');
            m_current.data.append(value.data(), value.size());
        } else {
            m_current.data = value.toByteArray(); // the usual one-line event: one exact allocation
        }
        m_hasData = true;
    } else if (field == "event") {
        m_current.event = value.toByteArray();
    }
    // "id", "retry" and unknown fields are ignored.
}

} // namespace sw::upstream
