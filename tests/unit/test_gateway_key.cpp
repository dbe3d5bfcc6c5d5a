// The one gateway key format and its stored hash, shared by `switchman key
// create` and the window's tenant editor.
#include "core/config/config_loader.h"
#include "core/credentials/gateway_key.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSet>
#include <QTest>

using namespace sw::credentials;

class TestGatewayKey : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void newKeyIsPrefixedBase64UrlOf32RandomBytes() {
        static const QRegularExpression shape(QStringLiteral("^sm-[A-Za-z0-9_-]{43}$"));
        QSet<QString> seen;
        for (int i = 0; i < 200; ++i) {
            const QString key = newGatewayKey();
            QVERIFY2(shape.match(key).hasMatch(), qPrintable(key));
            const QByteArray raw = QByteArray::fromBase64(key.mid(3).toLatin1(), QByteArray::Base64UrlEncoding);
            QCOMPARE(raw.size(), 32);
            seen.insert(key);
        }
        QCOMPARE(seen.size(), 200); // drawn from the CSPRNG, never repeated
    }
    void hashIsSha256HexOfTheKeyBytes() {
        // sha256("test"), the textbook vector: the stored form is plain SHA-256 of the key's bytes.
        QCOMPARE(gatewayKeyHash(QStringLiteral("test")),
                 QStringLiteral("sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"));
        QCOMPARE(gatewayKeyHash(QByteArrayView("test")), gatewayKeyHash(QStringLiteral("test")));
        // Non-ASCII text is hashed as UTF-8, the bytes a client sends in its header.
        QCOMPARE(gatewayKeyHash(QStringLiteral("sm-\u00e9")), gatewayKeyHash(QByteArrayView("sm-\xc3\xa9")));
    }
    void hashIsIndependentOfTheKeyFormat() {
        // A key made by an older window ("sk-sw-…") keeps matching: only its hash is configured.
        const QString old = QStringLiteral("sk-sw-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
        const QString stored = gatewayKeyHash(old);
        QCOMPARE(gatewayKeyHash(old.toUtf8()), stored);
        QVERIFY(stored != gatewayKeyHash(newGatewayKey()));
    }
    void presentedKeyMatchesItsStoredHashOnly() {
        const QString key = newGatewayKey();
        const QString presented = gatewayKeyHash(key.toUtf8());
        QVERIFY(sameGatewayKeyHash(presented, gatewayKeyHash(key)));
        // A hand-edited config may hold the hex in capitals; it is the same hash.
        QString upper = gatewayKeyHash(key);
        upper = upper.left(7) + upper.mid(7).toUpper();
        QVERIFY(sameGatewayKeyHash(presented, upper));
        QVERIFY(!sameGatewayKeyHash(presented, gatewayKeyHash(newGatewayKey())));
        QVERIFY(!sameGatewayKeyHash(presented, presented.chopped(1)));
        QVERIFY(!sameGatewayKeyHash(presented, QStringLiteral("sha256:")));
        QVERIFY(!sameGatewayKeyHash(presented, presented.mid(7)));
        // One differing digit anywhere, the last one too.
        QString last = presented;
        last[last.size() - 1] = last.at(last.size() - 1) == QLatin1Char('0') ? QLatin1Char('1') : QLatin1Char('0');
        QVERIFY(!sameGatewayKeyHash(presented, last));
    }
    void storedHashIsAcceptedByTheConfiguration() {
        QJsonObject tenant{{QStringLiteral("keys"), QJsonArray{gatewayKeyHash(newGatewayKey())}}};
        QJsonObject root{{QStringLiteral("tenants"), QJsonObject{{QStringLiteral("alice"), tenant}}}};
        const auto parsed = sw::config::parse(QJsonDocument(root).toJson());
        QVERIFY2(parsed.ok(), parsed.ok() ? "" : qPrintable(parsed.errors.first().toString()));
    }
};

QTEST_GUILESS_MAIN(TestGatewayKey)
#include "test_gateway_key.moc"
