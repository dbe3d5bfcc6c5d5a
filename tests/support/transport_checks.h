#pragma once
// Checks of the UpstreamCall contract that every transport must keep, shared by
// the tests of each transport so the contract is written once.

namespace sw::upstream {
class Transport;
}

namespace sw::test {

// 48 MiB of chunked body while the caller is paused stays at the upstream (TCP
// flow control), not in our memory; on resume every byte arrives, in order, and
// the call ends cleanly. Reports through QTest; check QTest::currentTestFailed().
void checkPausedCallHoldsAFloodAndResumesInOrder(sw::upstream::Transport &transport);

} // namespace sw::test
