// The one redaction, before any truncation.
#include "core/credentials/gateway_key.h"
#include "core/util/redaction.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTest>

#include <optional>

using namespace sw::util;

namespace {
// `text` with each of `which` written as a JSON \uXXXX escape (every character when `which` is empty).
QByteArray escaped(const QByteArray &text, const QByteArray &which = {}) {
    QByteArray out;
    for (const char c : text)
        out += which.isEmpty() || which.contains(c) ? "\\u" + QByteArray::number(uchar(c), 16).rightJustified(4, '0')
                                                    : QByteArray(1, c);
    return out;
}

// Every string of `v` as a client's JSON parser reads it, and those of JSON text within a string.
void collectStrings(const QJsonValue &v, QStringList &out) {
    if (v.isString()) {
        out << v.toString();
        const QJsonDocument inner = QJsonDocument::fromJson(v.toString().toUtf8());
        if (inner.isObject())
            collectStrings(inner.object(), out);
    } else if (v.isArray()) {
        for (const QJsonValue &e : v.toArray())
            collectStrings(e, out);
    } else if (v.isObject()) {
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            out << it.key();
            collectStrings(it.value(), out);
        }
    }
}

// The strings of an SSE frame's data lines as a client reads them; nothing when one is not JSON.
std::optional<QStringList> clientReads(const QByteArray &frame) {
    QStringList out;
    for (const QByteArray &line : frame.split('\n')) {
        if (!line.startsWith("data: "))
            continue;
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(line.mid(6), &error);
        if (error.error != QJsonParseError::NoError)
            return std::nullopt;
        collectStrings(doc.object(), out);
    }
    return out;
}
} // namespace

class TestRedaction : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void theAttemptsSecretAndKeyShapesGo() {
        // Key shapes are assembled here so that no key-shaped literal is kept in the repository.
        const QString anthropicShape =
            QStringLiteral("sk-ant-") + QStringLiteral("api03-") + QString(20, QLatin1Char('A'));
        const QString googleShape = QStringLiteral("AIza") + QStringLiteral("SyA") + QString(29, QLatin1Char('1'));
        const QString text =
            QStringLiteral("key test-secret-value-0123 rejected; Authorization: Bearer abc.def-123_XYZ789 "
                           "and %1 and %2")
                .arg(anthropicShape, googleShape);
        const QString out = redactSecrets(text, "test-secret-value-0123");
        QVERIFY2(!out.contains(QStringLiteral("test-secret")), qPrintable(out));
        QVERIFY(!out.contains(QStringLiteral("abc.def")));
        QVERIFY(!out.contains(QStringLiteral("AAAAAAAA")));
        QVERIFY(!out.contains(QStringLiteral("AIzaSy")));
        QVERIFY(out.contains(QStringLiteral("Bearer [redacted]")));
    }
    void theSecretGoesInTheFormsAnUpstreamQuotesItIn() {
        // An upstream that echoes the key it got percent-encoded or in base64 (probe X): a key
        // with "/", "+" or "=" in it, as some providers' are.
        const QByteArray secret = "PROBE.e/v+i=l0123456789xyz";
        const QString text = QStringLiteral("bad key %1, %2 or %3, or %4")
                                 .arg(QString::fromLatin1(secret), QString::fromLatin1(secret.toPercentEncoding()),
                                      QString::fromLatin1(secret.toBase64()),
                                      QString::fromLatin1(QByteArray(secret).replace("/", "\\/")));
        const QString out = redactSecrets(text, secret);
        QCOMPARE(out, QStringLiteral("bad key [redacted], [redacted] or [redacted], or [redacted]"));
        // Hex in either case, or the key lower-cased (probe Z2): on the text path and the byte path
        // a passthrough frame takes, whose cheap probe must see these forms too.
        const QString quoted =
            QStringLiteral("hex %1, HEX %2, lower %3.")
                .arg(QString::fromLatin1(secret.toHex()), QString::fromLatin1(secret.toHex().toUpper()),
                     QString::fromLatin1(secret.toLower()));
        QCOMPARE(redactSecrets(quoted, secret), QStringLiteral("hex [redacted], HEX [redacted], lower [redacted]."));
        QVERIFY(mayHoldSecret(QByteArray("data: ") + secret.toHex(), secret));
        QCOMPARE(redactSecrets(quoted.toUtf8(), secret),
                 QByteArray("hex [redacted], HEX [redacted], lower [redacted]."));
    }
    void aKeyQuotedMaskedInAnErrorGoes() {
        // OpenAI's 401 quotes the key it got masked, its start and its last four shown (probe E1 F4):
        // a tenant learned a dozen characters of the operator's shared key.
        const QByteArray secret = "test-VKMIs0123456789abcdefwjh3";
        const QString masked = QStringLiteral("Incorrect API key provided: test-VKMIs") + QString(30, u'*') +
                               QStringLiteral("wjh3. You can find your API key at the usual place.");
        QCOMPARE(redactErrorText(masked, secret),
                 QStringLiteral("Incorrect API key provided: [redacted]. You can find your API key at the usual "
                                "place."));
        QCOMPARE(redactErrorText(QStringLiteral("key fake-e4k1a-aaa****** refused")),
                 QStringLiteral("key [redacted] refused"));
        QCOMPARE(redactErrorText(QStringLiteral("key ******wjh3 refused")), QStringLiteral("key [redacted] refused"));
        // Whosever key the stars mask: the rule reads no secret, so it tells nothing about one.
        QCOMPARE(redactErrorText(masked, "another-key-entirely-0000"), redactErrorText(masked, secret));
        // An answer's text is never judged by masks (probe EV 1: asking the model to write "sk***XY"
        // and watching which guesses came back "[redacted]" recovered the whole key in 37 requests).
        for (const QString &guess : {QStringLiteral("te****wjh3"), QStringLiteral("test-VKMIs****"),
                                     QStringLiteral("sk-proj-****"), QStringLiteral("**bold****text** and ab****cd")}) {
            QCOMPARE(redactSecrets(guess, secret), guess);
            QCOMPARE(redactSecrets(guess.toUtf8(), secret), guess.toUtf8());
        }
    }
    void proseStays() {
        const QString text = QStringLiteral("use sk-learn for the task-runner; a bearer of news");
        QCOMPARE(redactSecrets(text), text);
        QCOMPARE(redactSecrets(QByteArray("event: ping\ndata: {}\n\n")), QByteArray("event: ping\ndata: {}\n\n"));
        QVERIFY(!mayHoldSecret("data: {\"type\":\"content_block_delta\"}"));
    }
    void gatewayKeysGo() {
        // A key as `switchman key create` and the window make it, quoted the way a log line or an
        // upstream error echoing a mis-sent header would hold it.
        const QString key = sw::credentials::newGatewayKey();
        QVERIFY(key.startsWith(QLatin1String(sw::credentials::kGatewayKeyPrefix)));
        const QString text = QStringLiteral("invalid x-api-key: %1 (check the header)").arg(key);
        const QString out = redactSecrets(text);
        QVERIFY2(!out.contains(key.mid(3, 12)), qPrintable(out));
        QCOMPARE(out, QStringLiteral("invalid x-api-key: [redacted] (check the header)"));
        // The byte path skips the regex when its cheap probe finds nothing: the probe must see the key too.
        QVERIFY(mayHoldSecret(key.toUtf8()));
        QVERIFY(!redactSecrets(text.toUtf8()).contains(key.mid(3, 12).toUtf8()));
        // Words that merely start with "sm-" stay.
        QCOMPARE(redactSecrets(QStringLiteral("the sm-lib and sm-tools")), QStringLiteral("the sm-lib and sm-tools"));
    }
    void theOnePassProbeAgreesWithASearchPerProbe() {
        // mayHoldSecret scans once instead of searching for each probe: it must say yes exactly when
        // one of the probes (or the secret) occurs, wherever it sits, including at the very end.
        const auto reference = [](QByteArrayView bytes, QByteArrayView secret) {
            if (secret.size() >= 8 && bytes.indexOf(secret) >= 0)
                return true;
            for (const char *probe :
                 {"sk-", "sk_", "sm-", "earer", "EARER", "AIza", "xai-", "rk-", "rk_", "pk-", "pk_"})
                if (bytes.indexOf(QByteArrayView(probe)) >= 0)
                    return true;
            return false;
        };
        const QByteArray secret = "s3cr3t-value-42";
        const QList<QByteArray> pieces{"sk-",  "sk_", "sm-", "earer", "EARER", "AIza", "xai-",           "rk-",  "rk_",
                                       "pk-",  "pk_", "sk",  "s",     "sm_",   "eare", "EARE",           "AIz",  "xai",
                                       "xai_", "rk",  "pk=", "Earer", "aIza",  "sK-",  "s3cr3t-value-4", secret, "data",
                                       ": {}", "\n",  "\0",  "kk-",   "ss"};
        int compared = 0;
        int positives = 0;
        // Every piece alone and at every offset of a short filler, then random concatenations.
        for (const QByteArray &piece : pieces) {
            for (int pad = 0; pad < 6; ++pad) {
                for (const QByteArray &text : {QByteArray(pad, 'a') + piece, piece + QByteArray(pad, 'a'),
                                               QByteArray(pad, 's') + piece + QByteArray(pad, 'k')}) {
                    const bool expected = reference(text, secret);
                    QCOMPARE(mayHoldSecret(text, secret), expected);
                    QCOMPARE(mayHoldSecret(text), reference(text, {}));
                    positives += expected;
                    ++compared;
                }
            }
        }
        QRandomGenerator rng(18);
        for (int i = 0; i < 20000; ++i) {
            QByteArray text;
            const int parts = rng.bounded(1, 8);
            for (int j = 0; j < parts; ++j)
                text += pieces.at(rng.bounded(pieces.size())).left(rng.bounded(1, 7));
            const bool expected = reference(text, secret);
            QCOMPARE(mayHoldSecret(text, secret), expected);
            QCOMPARE(mayHoldSecret(QByteArrayView(text).first(text.size() / 2)),
                     reference(QByteArrayView(text).first(text.size() / 2), {}));
            positives += expected;
            ++compared;
        }
        // Frames as long as a streamed event's (up to a few hundred bytes): probes at any offset,
        // between runs of the bytes the scan restarts on ('k' before a separator, 'e' before 'r').
        for (int i = 0; i < 20000; ++i) {
            QByteArray text(rng.bounded(0, 70), 'x');
            const int parts = rng.bounded(1, 12);
            for (int j = 0; j < parts; ++j) {
                text += pieces.at(rng.bounded(pieces.size())).left(rng.bounded(1, 7));
                text += QByteArray(rng.bounded(0, 20), j % 2 ? 'e' : 'k');
            }
            const bool expected = reference(text, secret);
            QCOMPARE(mayHoldSecret(text, secret), expected);
            QCOMPARE(mayHoldSecret(text), reference(text, {}));
            positives += expected;
            ++compared;
        }
        QVERIFY(positives > 2000 && compared - positives > 2000); // both answers were exercised
    }
    void aKeyWrittenWithJsonEscapesGoesFromAFrame() {
        // A same-API client gets the upstream's frame as written, and its JSON parser reads
        // "\u002B" as "+" (.NET writes "+" so): the byte check let such a key through, in any field
        // and in an in-band error (probe AB2 F2).
        const QByteArray key = QByteArray("AbCdEfGhIjKlMnOp") + '+' + "QrStUvWx/YzAbCdEf0123==";
        const QByteArray arguments = "{\"k\":\"" + escaped(key, "+") + "\"}"; // JSON in a string: escaped twice
        const QList<QByteArray> frames{
            "data: {\"id\":\"c1\",\"system_fingerprint\":\"" + escaped(key, "+") + "\",\"choices\":[]}\n\n",
            "data: {\"error\":{\"message\":\"upstream token " + escaped(key, "+") + " rejected\"}}\n\n",
            "event: message_start\ndata: {\"message\":{\"x_debug\":\"" + escaped(key) + "\"}}\n\n",
            "data: {\"a\":\"" + escaped(key, "+").replace("/", "\\/") + "\"}\n\n",
            "data: " +
                QJsonDocument(QJsonObject{{QStringLiteral("arguments"), QString::fromLatin1(arguments)}})
                    .toJson(QJsonDocument::Compact) +
                "\n\n",
        };
        QVERIFY(clientReads(redactSecrets(frames.first(), key))->join(u' ').contains(QString::fromLatin1(key)));
        for (const QByteArray &frame : frames) {
            const std::optional<QStringList> read = clientReads(redactSecretsInJson(frame, key));
            QVERIFY2(read, frame.constData()); // still JSON
            const QString all = read->join(u' ');
            QVERIFY2(!all.contains(QString::fromLatin1(key)), qPrintable(all));
            QVERIFY2(all.contains(QLatin1String(kRedacted)), qPrintable(all));
        }
        QCOMPARE(clientReads(redactSecretsInJson(frames.at(1), key))->last(),
                 QStringLiteral("upstream token [redacted] rejected"));
        // Key shapes and bearer tokens are read decoded too, whoever's key they are.
        const QByteArray shaped = "sk" + escaped("-") + "proj-" + QByteArray(24, 'A');
        const QByteArray other = "data: {\"m\":\"" + shaped + " and Bearer " + escaped(key, "+") + "\"}\n\n";
        QCOMPARE(clientReads(redactSecretsInJson(other))->at(1), QStringLiteral("[redacted] and Bearer [redacted]"));
    }
    void jsonWithoutAnEscapedKeyKeepsItsBytes() {
        // Escapes that spell no key (text in another script written as \u, a line break, a quote, a
        // URL's slashes) leave the frame as the upstream wrote it; a key written plainly goes as
        // redactSecrets takes it, and the rest stays.
        const QByteArray key = "canary-0123456789abcdef";
        const QByteArray plain = "data: {\"content\":\"caf\\u00e9\\n\\\"q\\\" http:\\/\\/x\\/y\",\"n\":1}\n\n";
        QCOMPARE(redactSecretsInJson(plain, key), plain);
        QCOMPARE(redactSecretsInJson(plain), plain);
        QByteArray withKey = plain;
        withKey.replace("\"n\":1", "\"n\":\"" + key + "\"");
        QByteArray expected = plain;
        expected.replace("\"n\":1", "\"n\":\"[redacted]\"");
        QCOMPARE(redactSecretsInJson(withKey, key), expected);
        // What no parser reads as a string spells nothing: a bad escape, a quote left open at its line.
        for (const QByteArray &odd :
             {QByteArray("data: {\"a\":\"\\uZZZZ x\"}\n\n"), QByteArray("event: \"x\ndata: {\"a\":\"\\u00e9\"}\n\n"),
              QByteArray("data: \"\\u00e9\\"), QByteArray("\"")})
            QCOMPARE(redactSecretsInJson(odd, key), odd);
        QCOMPARE(clientReads(redactSecretsInJson("event: \"x\ndata: {\"a\":\"" + escaped(key) + "\"}\n\n", key))->at(1),
                 QStringLiteral("[redacted]"));
    }
    void aLiteralNestedDeeperThanAnAnswerGoesWholeAtABoundedCost() {
        // Each wrap writes the literal inside another, a backslash as "\u005c" and a quote as
        // "\u0022": one backslash more a level, so n bytes nest about sqrt(n) levels, and reading
        // every one held the engine a minute and 14 GB for a 5 MB frame (review of 532). Up to three
        // decodings (a call's arguments and JSON in them) the key alone goes; deeper, the literal at
        // the third goes whole, and the decodings stay three whatever the depth.
        const QByteArray key = QByteArray("AbCdEfGhIjKlMnOp") + '+' + "QrStUvWx0123";
        for (const int wraps : {0, 1, 2, 3, 4, 40, 200}) {
            QByteArray literal = "\"" + escaped(key, "+") + " stays\"";
            for (int i = 0; i < wraps; ++i)
                literal = "\"" + literal.replace("\\", "\\u005c").replace("\"", "\\u0022") + "\"";
            const QByteArray frame = "data: {\"x\":" + literal + "}\n\n";
            int decodings = 0;
            qsizetype decodedBytes = 0;
            const std::optional<QByteArray> out = redactEscapedLiterals(frame, [&](QString &text) {
                ++decodings;
                decodedBytes += text.toUtf8().size();
                const QString clean = redactSecrets(text, key);
                const bool changed = clean != text;
                text = clean;
                return changed;
            });
            QVERIFY(out);
            QVERIFY2(decodings <= 3, qPrintable(QStringLiteral("%1 wraps: %2 decodings").arg(wraps).arg(decodings)));
            QVERIFY2(decodedBytes <= 3 * frame.size(), qPrintable(QString::number(wraps)));
            // The client's parser peels the literal a level at a time, down to text that is no literal.
            QString read = clientReads(*out)->at(1);
            int levels = 1;
            while (read.startsWith(u'"')) {
                const QJsonDocument inner = QJsonDocument::fromJson("[" + read.toUtf8() + "]");
                QVERIFY2(inner.isArray(), qPrintable(read));
                read = inner.array().at(0).toString();
                ++levels;
            }
            if (wraps < 3) {
                QCOMPARE(levels, wraps + 1);
                QCOMPARE(read, QStringLiteral("[redacted] stays"));
            } else {
                QCOMPARE(levels, 4);
                QCOMPARE(read, QLatin1String(kRedacted));
            }
        }
    }
    void redactionComesBeforeTheCut() {
        // A key across the cut must not leak its start.
        const QString text = QString(290, QLatin1Char('.')) + QStringLiteral(" sk-") + QStringLiteral("proj-") +
                             QStringLiteral("ABCDEFGHIJKLMNOPQRSTUVWX");
        const QString out = redactedAndTruncated(text, 300);
        QVERIFY2(!out.contains(QStringLiteral("sk-proj")), qPrintable(out));
    }
};

QTEST_GUILESS_MAIN(TestRedaction)
#include "test_redaction.moc"
