#include "server/http_exchange.h"

#include <QHttpServerResponder>

namespace sw::server {

HttpExchange::HttpExchange(QHttpServerResponder &&responder, QObject *parent)
    : QObject(parent), m_responder(std::make_unique<QHttpServerResponder>(std::move(responder)))
{
    m_socket = m_responder->socket();
    if (m_socket) {
        m_socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
        connect(m_socket, &QAbstractSocket::disconnected, this, [this]() {
            if (m_gone)
                return;
            m_gone = true;
            if (!m_finished)
                Q_EMIT clientGone();
        });
        connect(m_socket, &QAbstractSocket::bytesWritten, this, &HttpExchange::drained);
    } else {
        m_gone = true;
    }
}

HttpExchange::~HttpExchange() = default;

bool HttpExchange::isOpen() const
{
    return !m_gone && m_socket && m_socket->state() == QAbstractSocket::ConnectedState;
}

void HttpExchange::respond(int status, const upstream::HeaderList &headers, const QByteArray &body)
{
    if (m_headersSent || m_finished)
        return;
    m_headersSent = true;
    m_finished = true;
    if (!isOpen())
        return;
    m_responder->writeStatusLine(QHttpServerResponder::StatusCode(status));
    for (const auto &h : headers)
        m_responder->writeHeader(h.first, h.second);
    m_responder->writeHeader("Content-Length", QByteArray::number(body.size()));
    m_responder->writeBody(body);
}

void HttpExchange::beginStream(int status, const upstream::HeaderList &headers)
{
    if (m_headersSent || m_finished)
        return;
    m_headersSent = true;
    if (!isOpen())
        return;
    m_responder->writeStatusLine(QHttpServerResponder::StatusCode(status));
    for (const auto &h : headers)
        m_responder->writeHeader(h.first, h.second);
    m_responder->writeHeader("Transfer-Encoding", "chunked");
    m_responder->writeBody(QByteArray()); // ends the header block now, so the client sees 200 at once
}

void HttpExchange::write(const QByteArray &bytes)
{
    if (bytes.isEmpty() || m_finished || !m_headersSent || !isOpen())
        return;
    QByteArray frame = QByteArray::number(bytes.size(), 16);
    frame.reserve(frame.size() + bytes.size() + 4);
    frame += "\r\n";
    frame += bytes;
    frame += "\r\n";
    m_responder->writeBody(frame);
}

void HttpExchange::endStream()
{
    if (m_finished)
        return;
    m_finished = true;
    if (m_headersSent && isOpen())
        m_responder->writeBody(QByteArrayLiteral("0\r\n\r\n"));
}

qint64 HttpExchange::pendingBytes() const
{
    return m_socket ? m_socket->bytesToWrite() : 0;
}

void HttpExchange::abortConnection()
{
    m_finished = true;
    if (m_socket)
        m_socket->abort();
}

} // namespace sw::server
