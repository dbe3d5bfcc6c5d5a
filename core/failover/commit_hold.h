#pragma once
// record: Commit point (holdUntilCommit). Buffers an attempt's events until the
// first meaningful event or done (committed) or an error (failed). After
// commit every event passes straight through: a committed attempt is final.

#include "model/chat.h"

#include <QList>

namespace sw::failover {

class CommitHold {
public:
    enum class State { Holding, Committed, Failed };

    struct Step {
        // Events to hand to the client now (the replayed buffer at commit, then one by one).
        QList<model::StreamEvent> release;
        bool justCommitted = false;
        bool justFailed = false; // the failure event is failure(); nothing was released
    };

    Step feed(const model::StreamEvent &event);
    State state() const { return m_state; }
    bool committed() const { return m_state == State::Committed; }
    const model::StreamEvent &failure() const { return m_failure; }
    qsizetype heldCount() const { return m_held.size(); }

private:
    State m_state = State::Holding;
    QList<model::StreamEvent> m_held;
    model::StreamEvent m_failure;
};

} // namespace sw::failover
