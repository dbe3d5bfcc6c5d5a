#pragma once
// The commit point (docs/failover.md, "The commit point"). Buffers an attempt's events until the
// first meaningful event or done (committed) or an error (failed). After
// commit every event passes straight through: a committed attempt is final.
// Empty deltas are never held (a flood of them must not grow memory),
// and the hold counts the bytes it keeps so its owner can bound it.

#include "core/model/chat.h"

#include <QList>

namespace sw::failover {

class CommitHold {
public:
    enum class State { Holding, Committed, Failed };

    struct Step {
        // The held events to replay, in order, when this event committed the attempt.
        QList<model::StreamEvent> release;
        // Committed before this event: it goes to the client as it is (not copied into
        // `release`: a long answer passes hundreds of events this way).
        bool passThrough = false;
        bool justCommitted = false;
        bool justFailed = false; // the failure event is failure(); nothing was released
    };

    // Default bound on held bytes (limits.maxHoldBytes): past it the attempt fails as server_error.
    static constexpr qint64 kDefaultMaxBytes = 8LL * 1024 * 1024;

    // `bytes` is what the event costs to keep (its upstream frame); counted only if held.
    Step feed(const model::StreamEvent &event, qint64 bytes = 0);
    // True when the last feed() kept its event for replay (false for dropped empty deltas).
    bool lastHeld() const { return m_lastHeld; }
    qint64 heldBytes() const { return m_heldBytes; }
    State state() const { return m_state; }
    bool committed() const { return m_state == State::Committed; }
    const model::StreamEvent &failure() const { return m_failure; }
    qsizetype heldCount() const { return m_held.size(); }

private:
    State m_state = State::Holding;
    QList<model::StreamEvent> m_held;
    model::StreamEvent m_failure;
    qint64 m_heldBytes = 0;
    bool m_lastHeld = false;
};

} // namespace sw::failover
