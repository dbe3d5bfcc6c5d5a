#pragma once
// The upstream transport seam: starts HTTP calls and reports their progress.
// The Qt implementation (qt_transport) is the production one; tests may swap it.

#include "upstream/http_types.h"

#include <QObject>

namespace sw::upstream {

class UpstreamCall : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    // Closes the upstream connection at once. finished(Aborted) follows
    // synchronously or soon; no other signal after abort().
    virtual void abort() = 0;
    // Backpressure: stop (true) or resume (false) reading the upstream socket, so a slow
    // client slows the upstream instead of growing our queue. Default: no effect.
    virtual void setReadPaused(bool paused) { Q_UNUSED(paused); }

Q_SIGNALS:
    void responseStarted(int status, const sw::upstream::HeaderList &headers);
    void bodyData(const QByteArray &chunk); // incremental, arbitrary boundaries
    void finished(const sw::upstream::TransportResult &result);
};

class Transport {
public:
    virtual ~Transport() = default;
    // The call is parented to `parent` (the caller deletes it, or it dies with parent).
    virtual UpstreamCall *start(const HttpRequest &request, QObject *parent) = 0;
};

} // namespace sw::upstream
