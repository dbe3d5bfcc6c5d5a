#include "call_recorder.h"

#include "signal_wait.h"

namespace sw::test {

CallRecorder::CallRecorder(upstream::UpstreamCall *call, QObject *parent) : QObject(parent) {
    m_clock.start();
    connect(call, &upstream::UpstreamCall::responseStarted, this, [this](int s, const upstream::HeaderList &h) {
        signalsAfterFinished += finishedCount;
        ++startedCount;
        status = s;
        headers = h;
        order << "started";
    });
    connect(call, &upstream::UpstreamCall::bodyData, this, [this](const QByteArray &chunk) {
        signalsAfterFinished += finishedCount;
        body += chunk;
        chunks << chunk;
        chunkTimesMs << m_clock.elapsed();
        order << "data";
    });
    connect(call, &upstream::UpstreamCall::finished, this, [this](const upstream::TransportResult &r) {
        signalsAfterFinished += finishedCount;
        ++finishedCount;
        result = r;
        order << "finished";
    });
}

bool CallRecorder::waitFinished(int timeoutMs) const {
    return waitUntil([this]() { return isFinished(); }, timeoutMs);
}

} // namespace sw::test
