#pragma once
// Loop detection on the wire. Every request the gateway sends upstream carries a Via entry naming
// this engine, "1.1 switchman-<token>", after the Via the client sent (RFC 9110 7.6.3: an
// intermediary appends its entry to the field it forwards, and Via exists to avoid request loops;
// Squid refuses a request that holds its own name the same way). A request that arrives holding
// this engine's own entry has come round a loop: a provider whose baseUrl is the gateway itself,
// or two gateways naming each other. One that has passed more than kMaxSwitchmanHops Switchman
// gateways is in a ring of different ones (replicas behind one address). Either is answered 508
// on its head (Router::judgeHead), before any upstream is touched, and never retried upstream
// (FailureClassifier::classify). Without it one such request nested itself until every
// connection was taken, and the retries of the deepest hop's 503 kept it going with no client.

#include <QByteArray>
#include <QByteArrayView>
#include <QString>
#include <optional>

namespace sw::server {

class HopMarker {
public:
    static constexpr int kMaxSwitchmanHops = 8;

    HopMarker(); // a random token, made once per engine
    explicit HopMarker(QByteArray token);

    const QByteArray &name() const { return m_name; }   // "switchman-<token>"
    const QByteArray &entry() const { return m_entry; } // "1.1 switchman-<token>"
    // The Via value sent upstream: `clientVia` (the client's Via fields joined in order) and this
    // engine's entry after it; the entry alone (shared, nothing made) when the client sent none.
    QByteArray viaUpstream(const QByteArray &clientVia) const;

    // What the Via fields of a request say of loops: each field's value read in order.
    struct Reading {
        bool ownEntry = false;
        int switchmanHops = 0;
    };
    void read(QByteArrayView viaValue, Reading &reading) const;
    // The 508's message when `reading` shows a loop; nullopt when it does not.
    std::optional<QString> loopProblem(const Reading &reading) const;

private:
    QByteArray m_name;
    QByteArray m_entry;
};

} // namespace sw::server
