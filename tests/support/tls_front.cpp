#include "tls_front.h"

#include <QFile>
#include <QHostAddress>
#include <QPointer>
#include <QProcess>
#include <QSslKey>
#include <QSslSocket>
#include <QTcpSocket>

#include <sys/socket.h>

namespace sw::test {

namespace {
bool run(const QStringList &args, const QString &dir) {
    QProcess p;
    p.setWorkingDirectory(dir);
    p.start(QStringLiteral("openssl"), args);
    return p.waitForFinished(30000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

void resetHard(QAbstractSocket *s) {
    // SO_LINGER 0: the close is an RST, as the backend's was.
    const struct linger lin { 1, 0 };
    ::setsockopt(int(s->socketDescriptor()), SOL_SOCKET, SO_LINGER, &lin, sizeof lin);
    s->abort();
}
} // namespace

TlsFront::TlsFront(quint16 backendPort, const QString &serverName, QObject *parent)
    : QObject(parent), m_backendPort(backendPort) {
    if (!m_dir.isValid() || !makeCertificates(serverName))
        return;
    QFile cert(m_dir.filePath(QStringLiteral("server.pem"))), key(m_dir.filePath(QStringLiteral("server.key")));
    if (!cert.open(QIODevice::ReadOnly) || !key.open(QIODevice::ReadOnly))
        return;
    QSslConfiguration conf = QSslConfiguration::defaultConfiguration();
    conf.setLocalCertificate(QSslCertificate(cert.readAll()));
    conf.setPrivateKey(QSslKey(key.readAll(), QSsl::Ec));
    conf.setPeerVerifyMode(QSslSocket::VerifyNone);
    m_server.setSslConfiguration(conf);
    m_conf = conf;
    connect(&m_server, &QSslServer::pendingConnectionAvailable, this, [this] {
        while (auto *client = qobject_cast<QSslSocket *>(m_server.nextPendingConnection()))
            onEncrypted(client);
    });
    m_ok = m_server.listen(QHostAddress::LocalHost, 0);
    m_port = m_server.serverPort();
}

bool TlsFront::makeCertificates(const QString &serverName) {
    const QString dir = m_dir.path();
    const QStringList ec{QStringLiteral("-newkey"), QStringLiteral("ec"), QStringLiteral("-pkeyopt"),
                         QStringLiteral("ec_paramgen_curve:prime256v1"), QStringLiteral("-nodes")};
    QFile ext(m_dir.filePath(QStringLiteral("server.ext")));
    if (!ext.open(QIODevice::WriteOnly))
        return false;
    const bool ip = !QHostAddress(serverName).isNull();
    ext.write(QStringLiteral("subjectAltName=%1:%2\nbasicConstraints=CA:FALSE\n")
                  .arg(ip ? QStringLiteral("IP") : QStringLiteral("DNS"), serverName)
                  .toLatin1());
    ext.close();
    return run(QStringList{QStringLiteral("req"), QStringLiteral("-x509")} + ec +
                   QStringList{QStringLiteral("-keyout"), QStringLiteral("ca.key"), QStringLiteral("-out"),
                               QStringLiteral("ca.pem"), QStringLiteral("-days"), QStringLiteral("2"),
                               QStringLiteral("-subj"), QStringLiteral("/CN=Switchman throwaway test CA"),
                               QStringLiteral("-addext"), QStringLiteral("basicConstraints=critical,CA:TRUE"),
                               QStringLiteral("-addext"), QStringLiteral("keyUsage=critical,keyCertSign,cRLSign")},
               dir) &&
           run(QStringList{QStringLiteral("req")} + ec +
                   QStringList{QStringLiteral("-keyout"), QStringLiteral("server.key"), QStringLiteral("-out"),
                               QStringLiteral("server.csr"), QStringLiteral("-subj"),
                               QStringLiteral("/CN=") + serverName},
               dir) &&
           run({QStringLiteral("x509"), QStringLiteral("-req"), QStringLiteral("-in"), QStringLiteral("server.csr"),
                QStringLiteral("-CA"), QStringLiteral("ca.pem"), QStringLiteral("-CAkey"), QStringLiteral("ca.key"),
                QStringLiteral("-CAcreateserial"), QStringLiteral("-out"), QStringLiteral("server.pem"),
                QStringLiteral("-days"), QStringLiteral("1"), QStringLiteral("-extfile"), QStringLiteral("server.ext")},
               dir);
}

QString TlsFront::baseUrl() const {
    return QStringLiteral("https://127.0.0.1:%1").arg(m_port);
}

void TlsFront::setRefusing(bool refusing) {
    if (refusing)
        m_server.close();
    else if (!m_server.isListening())
        m_server.listen(QHostAddress::LocalHost, m_port);
}

void TlsFront::onEncrypted(QSslSocket *client) {
    // Bytes both ways; each side's end is passed on as it came (FIN as FIN, RST as RST).
    client->setParent(this);
    auto *backend = new QTcpSocket(client);
    QPointer<QSslSocket> c(client);
    connect(backend, &QTcpSocket::connected, client, [client, backend] {
        if (client->bytesAvailable() > 0)
            backend->write(client->readAll());
    });
    connect(client, &QSslSocket::readyRead, backend, [client, backend] {
        if (backend->state() == QAbstractSocket::ConnectedState)
            backend->write(client->readAll());
    });
    // Toward the client the relay holds at most kRelayWindow (read from the backend, not yet
    // taken by the kernel): a flooding backend is held by TCP, not by the front's memory,
    // so a test of how much a paused gateway takes in measures the gateway.
    backend->setReadBufferSize(kRelayWindow);
    auto pump = [client, backend] {
        while (backend->bytesAvailable() > 0 && client->bytesToWrite() + client->encryptedBytesToWrite() < kRelayWindow)
            client->write(backend->read(kRelayWindow));
    };
    connect(backend, &QTcpSocket::readyRead, client, pump);
    connect(client, &QSslSocket::encryptedBytesWritten, backend, pump);
    connect(backend, &QTcpSocket::errorOccurred, client, [c, backend](QAbstractSocket::SocketError e) {
        if (!c)
            return;
        if (e == QAbstractSocket::RemoteHostClosedError) {
            c->write(backend->readAll());
            c->disconnectFromHost();
        } else {
            resetHard(c);
        }
    });
    connect(client, &QSslSocket::disconnected, client, [client] { client->deleteLater(); });
    backend->connectToHost(QHostAddress::LocalHost, m_backendPort);
}

} // namespace sw::test
