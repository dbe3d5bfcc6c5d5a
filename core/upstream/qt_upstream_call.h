#pragma once
// One HTTP call made by QtTransport: adapts a QNetworkReply to UpstreamCall.

#include "core/upstream/transport.h"

#include <QNetworkReply>
#include <QPointer>
#include <functional>

namespace sw::upstream {

class QtUpstreamCall final : public UpstreamCall {
    Q_OBJECT
public:
    // While paused, QNAM hands the reply at most this much; the rest waits in the
    // kernel and then at the upstream (HTTP/1.1; see setReadPaused in the .cpp).
    static constexpr qint64 kPausedReadBuffer = 64 * 1024;
    // An aborted call whose response has started is let run this long and this far,
    // unheard, so that a body about to end leaves its connection reusable.
    static constexpr int kLingerMs = 50;
    static constexpr qint64 kLingerBytes = 64 * 1024;

    // `release` runs exactly once, when the call stops using its connection.
    // `lingerMs` 0: an abort closes at once, whatever the response's state.
    QtUpstreamCall(QNetworkReply *reply, std::function<void()> release, QObject *parent, int lingerMs = kLingerMs);
    ~QtUpstreamCall() override;
    Q_DISABLE_COPY_MOVE(QtUpstreamCall)

    void abort() override;
    void setReadPaused(bool paused) override;
    bool hasUnreadBytes() const override;
    bool isFinished() const { return m_done; }

    // Maps a finished reply's error to a connection-level cause; an HTTP error
    // status with a complete response is not a transport error.
    static TransportResult resultFor(QNetworkReply::NetworkError error, bool gotHttpStatus, const QString &message);

private:
    void onMetaDataChanged();
    void onReadyRead();
    void onFinished();
    void announceResponse();
    void resumeReading();
    void lingerThenClose();
    void detach(); // disconnects and schedules the reply's deletion, releases the slot

    QPointer<QNetworkReply> m_reply;
    std::function<void()> m_release;
    bool m_started = false;
    int m_lingerMs = kLingerMs;
    bool m_done = false;
    bool m_paused = false;
    bool m_finishedWhilePaused = false; // reported on resume, after the bytes held before it
};

} // namespace sw::upstream
