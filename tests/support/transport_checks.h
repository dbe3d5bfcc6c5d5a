#pragma once
// Checks of the UpstreamCall contract that every transport must keep, shared by
// the tests of each transport so the contract is written once.

#include <QString>
#include <functional>

namespace sw::upstream {
class Transport;
}

namespace sw::test {

// How much of a flood a paused call may take in.
enum class PauseBound {
    // The transport reads its own socket: a pause holds the rest at the upstream
    // (TCP flow control), whatever the scheduling.
    Configured,
    // QtTransport: QNAM's HTTP thread reads on until the pause reaches it, so what
    // a flood puts into memory meanwhile depends on how soon that thread is told
    // (measured and reported, not bounded; see QtUpstreamCall::setReadPaused).
    Scheduling,
};

// 48 MiB of chunked body while the caller is paused: nothing reaches the caller,
// with PauseBound::Configured the rest stays at the upstream (TCP flow control), not
// in our memory; on resume every byte arrives, in order, and the call ends cleanly.
// Reports through QTest; check QTest::currentTestFailed().
// `front`, when given, puts something between the call and the flooding upstream (a TLS
// front, say) and returns the base URL to call; it gets the upstream's port, and sets the
// request's trust (the CA bundle that verifies the front) when it has one.
void checkPausedCallHoldsAFloodAndResumesInOrder(sw::upstream::Transport &transport, PauseBound bound,
                                                 const std::function<QString(quint16, QString *trust)> &front = {});

} // namespace sw::test
