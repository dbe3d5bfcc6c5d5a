#pragma once
// The bytes that all requests in flight hold at once (limits.maxBodyBytesInFlight), one
// budget per engine: request bodies, taken by the connection guard as their bytes arrive,
// whole non-streaming answers, taken by the upstream layer as they are read and held until
// their request is done, and then what the client has not read of its answer, held by the
// connection guard until the kernel takes it (or the connection goes). limits.maxBodyBytes and limits.maxResponseBytes
// bound one request; this bounds them all together, so that many large requests or answers at once are answered 503
// instead of growing the process without end. Engine thread only.

#include <QString>

#include <functional>

namespace sw::util {

class ByteBudget {
public:
    explicit ByteBudget(qint64 cap) : m_cap(cap) {}
    // Takes `bytes` when they fit under the cap, else takes nothing and returns false.
    bool take(qint64 bytes) {
        if (bytes > m_cap - m_held)
            return false;
        m_held += bytes;
        m_peak = qMax(m_peak, m_held);
        return true;
    }
    // Takes `bytes` that are held already, whether they fit or not (an answer the client has not read
    // yet): past the cap, every take() fails until enough is given back.
    void hold(qint64 bytes) {
        m_held += qMax<qint64>(0, bytes);
        m_peak = qMax(m_peak, m_held);
    }
    void give(qint64 bytes) {
        m_held = qMax<qint64>(0, m_held - bytes);
        if (m_held == 0 && m_peak >= m_largePeak && m_onEmptiedAfterLarge) {
            m_peak = 0;
            m_onEmptiedAfterLarge();
        }
    }
    // `f` runs each time the budget empties after it held `bytes` or more at once since the last
    // time: a request or answer of many megabytes is done, and the engine may give the heap its
    // decoding took back to the system (util/heap_release.h). Never for ordinary requests.
    void onEmptiedAfterLarge(qint64 bytes, std::function<void()> f) {
        m_largePeak = bytes;
        m_onEmptiedAfterLarge = std::move(f);
    }
    // What a new take() may still get: 0 when the cap is reached or passed.
    qint64 room() const { return qMax<qint64>(0, m_cap - m_held); }
    qint64 held() const { return m_held; }
    qint64 cap() const { return m_cap; }
    void setCap(qint64 cap) { m_cap = cap; } // what is held stays held; new takes meet the new cap

    // "12 MiB", or "340 KiB" under a MiB, for messages that name what is held.
    static QString describe(qint64 bytes) {
        return bytes >= (1 << 20) ? QStringLiteral("%1 MiB").arg(bytes >> 20)
                                  : QStringLiteral("%1 KiB").arg(bytes >> 10);
    }

private:
    qint64 m_cap;
    qint64 m_held = 0;
    qint64 m_peak = 0; // the most held at once since the budget last emptied after a large peak
    qint64 m_largePeak = 0;
    std::function<void()> m_onEmptiedAfterLarge;
};

} // namespace sw::util
