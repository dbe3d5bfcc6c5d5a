#pragma once
// TLS in front of a plain upstream (the fake upstream), so every fault it can
// script is seen over https://, as real providers are reached. The
// certificates are made at construction with the openssl command line: a
// throwaway CA, and a server certificate it signed for 127.0.0.1 (or, to test
// the name check, for another host). Nothing is kept after the test.

#include <QHostAddress>
#include <QObject>
#include <QSslConfiguration>
#include <QSslServer>
#include <QString>
#include <QTemporaryDir>

namespace sw::test {

class TlsFront final : public QObject {
    Q_OBJECT
public:
    // What the relay reads from the backend ahead of the client taking it.
    static constexpr qint64 kRelayWindow = 256 * 1024;

    // `serverName`: the name the server certificate is issued for (SAN).
    explicit TlsFront(quint16 backendPort, const QString &serverName = QStringLiteral("127.0.0.1"),
                      QObject *parent = nullptr);

    bool ok() const { return m_ok; } // certificates made and listening
    QString baseUrl() const;         // https://127.0.0.1:<port>
    QString caFile() const { return m_dir.filePath(QStringLiteral("ca.pem")); }
    void setRefusing(bool refusing); // closes the listener (connections refused) or re-opens it
    // The server side's TLS setup (its certificate and key), for a test's own TLS server.
    QSslConfiguration serverConfiguration() const { return m_conf; }

private:
    bool makeCertificates(const QString &serverName);
    void onEncrypted(QSslSocket *client);

    QTemporaryDir m_dir;
    QSslServer m_server;
    QSslConfiguration m_conf;
    quint16 m_backendPort = 0;
    quint16 m_port = 0;
    bool m_ok = false;
};

} // namespace sw::test
