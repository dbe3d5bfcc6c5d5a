#pragma once
// The JSON admin API under /admin/ on the listener: what the window shows and
// does (marks, credentials, attempts, usage, reload, a live event feed), for a
// headless user. The router has checked the admin key before handle().

#include "core/server/inbound_request.h"

#include "core/config/config.h"

#include <QList>
#include <QObject>
#include <QPointer>
#include <QTcpSocket>

namespace sw::server {

class EngineControl;
class HttpExchange;

class AdminApi final : public QObject {
    Q_OBJECT
public:
    explicit AdminApi(EngineControl &engine, QObject *parent = nullptr);
    // Handles any /admin/ path; always answers.
    void handle(const InboundRequest &request, HttpExchange *exchange);
    // The marks changed: every event-feed subscriber gets the new set.
    void publishMarks();
    // The configuration changed (a reload, the window's settings): every kept admin exchange whose
    // opener is no longer an admin (tenant gone, admin right or key taken away) ends now, its
    // event feed with a final "revoked" event saying why. The engine connects its configApplied
    // signal here (as marksChanged to publishMarks: core/server knows nothing above it). Also run
    // before any frame goes out, so a feed never outlives its key by one event.
    void configChanged();

    static QByteArray marksJson(const EngineControl &engine);
    // GET /admin/credentials body (admin_credentials.cpp): references and states, never a secret.
    static QByteArray credentialsJson(const EngineControl &engine);

    // An /admin/events subscriber whose socket holds more than this unsent is behind: it gets no
    // new frames; marks changes are coalesced into one snapshot sent when it catches up.
    static constexpr qint64 kFeedSoftLimitBytes = 64 * 1024;
    // A subscriber that missed this many bytes of attempt events while behind is dropped.
    static constexpr qint64 kFeedHardLimitBytes = 1024 * 1024;
    int feedCount() const { return int(m_feeds.size()); }

    // Who opened an admin exchange: the tenant and the sha256 of the key it presented (never the key).
    struct Opener {
        QString tenant;
        QString keyHash;
        bool known = false; // false: the engine told no configuration; never re-checked
    };
    // Whether `opener` would still be let in as an admin under `config`.
    static bool stillAdmin(const Opener &opener, const config::Config &config);

private:
    struct Feed {
        QPointer<HttpExchange> exchange;
        Opener opener;
        QPointer<QTcpSocket> socket; // to see what it has not sent yet
        bool marksPending = false;   // a marks change it has not seen
        qint64 skippedBytes = 0;     // attempt frames it missed while behind
        qint64 skippedAttempts = 0;  // how many: told in a `gap` event when it catches up
    };
    // GET / DELETE /admin/credentials.
    void handleCredentials(const InboundRequest &request, HttpExchange *exchange);
    // GET /admin/usage: from the usage ledger, filtered and grouped.
    void handleUsage(const InboundRequest &request, HttpExchange *exchange);
    void json(HttpExchange *exchange, int status, const QByteArray &body, const http::HeaderList &extra = {});
    // 405 with Allow: `allowed` lists the methods the path answers ("GET, DELETE").
    void wrongMethod(HttpExchange *exchange, const QByteArray &allowed);
    void broadcast(const QByteArray &event, const QByteArray &json);
    void catchUp(HttpExchange *exchange);
    void writeGap(Feed &feed); // a `gap` event naming the attempt events it missed, if any
    static qint64 unsent(const Feed &feed);
    Opener openerOf(const InboundRequest &request) const;
    // The engine's configuration differs from the one the feeds were last checked against: check them.
    void recheckIfConfigChanged();
    EngineControl &m_engine;
    const config::Config *m_checkedConfig = nullptr; // the configuration the feeds were last checked against
    QList<Feed> m_feeds;
};

} // namespace sw::server
