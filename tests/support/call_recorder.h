#pragma once
// Records everything an UpstreamCall reports, with timestamps, for assertions.

#include "core/upstream/transport.h"

#include <QElapsedTimer>
#include <QList>
#include <QObject>
#include <optional>

namespace sw::test {

class CallRecorder final : public QObject {
    Q_OBJECT
public:
    explicit CallRecorder(upstream::UpstreamCall *call, QObject *parent = nullptr);

    int startedCount = 0;
    int status = 0;
    upstream::HeaderList headers;
    QByteArray body;
    QList<QByteArray> chunks;
    QList<qint64> chunkTimesMs; // since construction
    int finishedCount = 0;
    std::optional<upstream::TransportResult> result;
    int signalsAfterFinished = 0;
    QList<QByteArray> order; // "started", "data", "finished"

    bool isFinished() const { return finishedCount > 0; }
    bool waitFinished(int timeoutMs = 5000) const;
    upstream::TransportError error() const { return result ? result->error : upstream::TransportError::Other; }

private:
    QElapsedTimer m_clock;
};

} // namespace sw::test
