#include "core/upstream/qt_transport.h"

#include "core/upstream/qt_upstream_call.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QPointer>
#include <QSslConfiguration>

namespace sw::upstream {

namespace {

QNetworkRequest toQtRequest(const HttpRequest &request, const QList<QSslCertificate> &extraCa) {
    QNetworkRequest r(request.url);
    // The gateway decides what to do with a 3xx; never follow one silently.
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);
    // No cache, no cookies: every call is independent and carries only what the adapter set.
    r.setAttribute(QNetworkRequest::CacheLoadControlAttribute, QNetworkRequest::AlwaysNetwork);
    r.setAttribute(QNetworkRequest::CacheSaveControlAttribute, false);
    r.setAttribute(QNetworkRequest::CookieLoadControlAttribute, QNetworkRequest::Manual);
    r.setAttribute(QNetworkRequest::CookieSaveControlAttribute, QNetworkRequest::Manual);
    r.setAttribute(QNetworkRequest::DoNotBufferUploadDataAttribute, false);
    r.setTransferTimeout(0); // deadlines belong to the attempt budget, not to Qt
    if (!extraCa.isEmpty()) {
        QSslConfiguration tls = QSslConfiguration::defaultConfiguration();
        tls.addCaCertificates(extraCa); // in addition to the system store, never instead of it
        r.setSslConfiguration(tls);
    }
    for (const auto &h : request.headers)
        r.setRawHeader(h.first, h.second);
    return r;
}

} // namespace

QtTransport::QtTransport(QObject *parent) : QObject(parent) {}

QtTransport::~QtTransport() = default; // managers are children; their replies die with them

void QtTransport::setExtraCaCertificates(const CaTable &table) {
    if (table == m_extraCa)
        return;
    m_extraCa = table;
    for (auto &pm : m_pool)
        pm.manager->clearConnectionCache(); // verified under the old table
}

QtTransport::PooledManager &QtTransport::managerFor(const QString &hostKey, const QString &trust) {
    for (auto &pm : m_pool)
        if (pm.trust == trust && pm.activeByHost.value(hostKey) < m_maxPerManager)
            return pm;
    PooledManager pm;
    pm.trust = trust;
    pm.manager = new QNetworkAccessManager(this);
    pm.manager->setRedirectPolicy(QNetworkRequest::ManualRedirectPolicy);
    pm.manager->setCookieJar(nullptr);
    pm.manager->setAutoDeleteReplies(false);
    m_pool.append(pm);
    return m_pool.last();
}

void QtTransport::release(QNetworkAccessManager *manager, const QString &hostKey) {
    for (auto &pm : m_pool) {
        if (pm.manager != manager)
            continue;
        auto it = pm.activeByHost.find(hostKey);
        if (it != pm.activeByHost.end() && --it.value() <= 0)
            pm.activeByHost.erase(it);
        break;
    }
    --m_activeCalls;
}

UpstreamCall *QtTransport::start(const HttpRequest &request, QObject *parent) {
    const QString hostKey = hostKeyOf(request.url);
    PooledManager &pm = managerFor(hostKey, request.trust);
    ++pm.activeByHost[hostKey];
    ++m_activeCalls;
    QNetworkAccessManager *manager = pm.manager;

    QNetworkReply *reply = manager->sendCustomRequest(
        toQtRequest(request, request.trust.isEmpty() ? QList<QSslCertificate>() : m_extraCa.value(request.trust)),
        request.method, request.body);
    QPointer<QtTransport> self(this);
    auto release = [self, manager, hostKey]() {
        if (self)
            self->release(manager, hostKey);
    };
    return new QtUpstreamCall(reply, std::move(release), parent);
}

} // namespace sw::upstream
