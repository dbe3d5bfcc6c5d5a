// http::decodeContent: an upstream's error page sent compressed although every request asks for
// identity is read for its words (gzip, both kinds of "deflate"), bounded however far it inflates,
// and a coding the gateway does not read is said to be one rather than passed on as bytes.

#include "core/http/content_coding.h"
#include "wire_fixtures.h"

#include <QtTest>

using sw::http::decodeContent;

namespace {
// qCompress writes a 4-byte length, then a zlib stream (2-byte header, raw deflate, 4-byte sum).
QByteArray zlibStream(const QByteArray &data) {
    return qCompress(data).mid(4);
}
} // namespace

class TestContentCoding : public QObject {
    Q_OBJECT
private slots:
    void eachCodingReadsAsItsWords() {
        const QByteArray words = R"({"error":{"message":"Your credit balance is too low"}})";
        const QByteArray gzip = sw::test::readTestData(QStringLiteral("failures/anthropic_400_credit_balance.json.gz"));
        QVERIFY(decodeContent(gzip, "gzip", 65536).value_or(QByteArray()).contains("credit balance is too low"));
        QCOMPARE(decodeContent(gzip, " X-GZIP ", 65536), decodeContent(gzip, "gzip", 65536));
        QCOMPARE(decodeContent(zlibStream(words), "deflate", 65536), std::optional<QByteArray>(words));
        const QByteArray raw = zlibStream(words).mid(2).chopped(4); // servers send bare deflate too
        QCOMPARE(decodeContent(raw, "deflate", 65536), std::optional<QByteArray>(words));
        QCOMPARE(decodeContent(words, "identity", 65536), std::optional<QByteArray>(words));
    }
    void aBombIsReadOnlyAsFarAsTheBound() {
        const QByteArray bomb = zlibStream(QByteArray(64 * 1024 * 1024, ' ')); // 64 MiB of spaces
        QVERIFY(bomb.size() < 1024 * 1024);
        const auto read = decodeContent(bomb, "deflate", 65536);
        QVERIFY(read);
        QCOMPARE(read->size(), 65536);
    }
    void whatItCannotReadIsNothing() {
        QVERIFY(!decodeContent("not compressed at all", "gzip", 65536));
        QVERIFY(!decodeContent(zlibStream("x"), "br", 65536));
        QVERIFY(!decodeContent(zlibStream("x"), "gzip, br", 65536));
    }
};

QTEST_GUILESS_MAIN(TestContentCoding)
#include "test_content_coding.moc"
