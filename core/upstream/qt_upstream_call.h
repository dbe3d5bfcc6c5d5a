#pragma once
// One HTTP call made by QtTransport: adapts a QNetworkReply to UpstreamCall.

#include "upstream/transport.h"

#include <QNetworkReply>
#include <QPointer>
#include <functional>

namespace sw::upstream {

class QtUpstreamCall final : public UpstreamCall {
    Q_OBJECT
public:
    // `release` runs exactly once, when the call stops using its connection.
    QtUpstreamCall(QNetworkReply *reply, std::function<void()> release, QObject *parent);
    ~QtUpstreamCall() override;
    Q_DISABLE_COPY_MOVE(QtUpstreamCall)

    void abort() override;
    bool isFinished() const { return m_done; }

    // Maps a finished reply's error to a connection-level cause; an HTTP error
    // status with a complete response is not a transport error.
    static TransportResult resultFor(QNetworkReply::NetworkError error, bool gotHttpStatus, const QString &message);

private:
    void onMetaDataChanged();
    void onReadyRead();
    void onFinished();
    void announceResponse();
    void detach(); // disconnects and schedules the reply's deletion, releases the slot

    QPointer<QNetworkReply> m_reply;
    std::function<void()> m_release;
    bool m_started = false;
    bool m_done = false;
};

} // namespace sw::upstream
