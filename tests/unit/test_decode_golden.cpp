// Every request body the test suites and the SDK clients sent (tests/data/decode_corpus.txt:
// valid, invalid and odd), decoded by its API's codec and described by what the gateway does
// with it: the 400 it answers, or the flags it reads and the body each upstream API gets
// (cross-API translations, the same-API splice, and the same-API body written whole), or why an
// upstream cannot take it. tests/data/decode_golden.txt holds those descriptions as the decoder
// gave them when the corpus was recorded; any change a client could notice shows here.
//
//   SWITCHMAN_DECODE_CAPTURE=1 test_decode_golden       rewrite the golden file (review the diff)
//   SWITCHMAN_DECODE_DIR=DIR SWITCHMAN_DECODE_OUT=FILE test_decode_golden describeDirectory
//       describes every file DIR holds (named "<api>-<anything>") into FILE, for a one-off
//       comparison over bodies too big to keep in the repo.

#include "core/formats/inbound_codec.h"
#include "core/model/chat_request.h"
#include "core/upstream/upstream_adapter.h"
#include "core/wire/api.h"
#include "wire_fixtures.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QtTest>

using namespace sw;

namespace {

const wire::Api kInbound[] = {wire::Api::AnthropicMessages, wire::Api::OpenAICompletions, wire::Api::OpenAIResponses,
                              wire::Api::Pi};
const wire::Api kUpstream[] = {wire::Api::AnthropicMessages, wire::Api::OpenAICompletions, wire::Api::OpenAIResponses,
                               wire::Api::Google};

std::optional<wire::Api> inboundNamed(QByteArrayView name) {
    for (wire::Api api : kInbound)
        if (name == QByteArrayView(wire::apiName(api).data(), wire::apiName(api).size()))
            return api;
    return std::nullopt;
}

// One body's description, one line per fact, each line prefixed so a diff reads on its own.
QByteArray describe(wire::Api api, const QByteArray &body) {
    QByteArray out;
    model::GatewayError error;
    const std::optional<model::ChatRequest> req = formats::codecFor(api).decode(body, &error);
    if (!req) {
        out += "  rejected " + QByteArray::number(error.status) + ": " + error.message.toUtf8() + '\n';
        return out;
    }
    out += "  model " + req->model.toUtf8() + " stream " + QByteArray(req->stream ? "1" : "0") + " usage " +
           QByteArray(req->includeUsage ? "1" : "0") + " custom [" + req->customToolNames().join(',').toUtf8() + "]\n";
    for (wire::Api to : kUpstream) {
        const upstream::UpstreamAdapter *adapter = upstream::adapterFor(wire::apiName(to));
        const QByteArray name(wire::apiName(to).data(), wire::apiName(to).size());
        if (const auto why = adapter->incompatibility(*req)) {
            out += "  " + name + " refuses: " + why->toUtf8() + '\n';
            continue;
        }
        upstream::Target target;
        target.provider = QStringLiteral("golden");
        target.modelId = QStringLiteral("upstream-model");
        target.api = wire::apiName(to);
        target.baseUrl = QStringLiteral("http://127.0.0.1:1/v1");
        out += "  " + name + " body " + adapter->buildRequest(*req, target, {}).body + '\n';
        if (to == api) { // and the same body written whole, as when the bytes cannot be spliced
            model::ChatRequest whole = *req;
            whole.rawBody.clear();
            out += "  " + name + " whole " + adapter->buildRequest(whole, target, {}).body + '\n';
        }
    }
    return out;
}

QByteArray header(wire::Api api, const QByteArray &body) {
    return QByteArray(wire::apiName(api).data(), wire::apiName(api).size()) + ' ' +
           QCryptographicHash::hash(body, QCryptographicHash::Sha1).toHex().left(16) + '\n';
}

// The corpus: one body per line, "<api> <base64 of the body>".
QList<std::pair<wire::Api, QByteArray>> readCorpus() {
    QList<std::pair<wire::Api, QByteArray>> bodies;
    for (const QByteArray &line : test::readTestData(QStringLiteral("decode_corpus.txt")).split('\n')) {
        const qsizetype space = line.indexOf(' ');
        if (space < 0)
            continue;
        const auto api = inboundNamed(line.left(space));
        if (!api)
            qFatal("decode_corpus.txt: unknown API %s", line.left(space).constData());
        bodies.append({*api, QByteArray::fromBase64(line.mid(space + 1))});
    }
    return bodies;
}

} // namespace

class TestDecodeGolden : public QObject {
    Q_OBJECT
private slots:
    void everyBodyDecodesAsRecorded();
    void describeDirectory();
};

void TestDecodeGolden::everyBodyDecodesAsRecorded() {
    const auto corpus = readCorpus();
    QVERIFY2(corpus.size() > 1000, "the corpus went missing");
    QByteArray all;
    for (const auto &[api, body] : corpus)
        all += header(api, body) + describe(api, body);
    const QString goldenPath = QStringLiteral(SWITCHMAN_TEST_DATA "/decode_golden.txt");
    if (qEnvironmentVariableIsSet("SWITCHMAN_DECODE_CAPTURE")) {
        QFile f(goldenPath);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(all);
        QSKIP("golden file written");
    }
    const QByteArray golden = test::readTestData(QStringLiteral("decode_golden.txt"));
    if (all == golden)
        return;
    // The first body that differs, with both descriptions.
    const QList<QByteArray> got = all.split('\n'), want = golden.split('\n');
    qsizetype i = 0;
    while (i < got.size() && i < want.size() && got.at(i) == want.at(i))
        ++i;
    qsizetype start = i;
    while (start > 0 && got.at(start).startsWith("  "))
        --start;
    QFAIL(qPrintable(QStringLiteral("line %1 differs, for body %2:\n got: %3\nwant: %4")
                         .arg(i + 1)
                         .arg(QString::fromUtf8(got.value(start)))
                         .arg(QString::fromUtf8(got.value(i).left(600)))
                         .arg(QString::fromUtf8(want.value(i).left(600)))));
}

void TestDecodeGolden::describeDirectory() {
    const QString dir = qEnvironmentVariable("SWITCHMAN_DECODE_DIR");
    const QString outPath = qEnvironmentVariable("SWITCHMAN_DECODE_OUT");
    if (dir.isEmpty() || outPath.isEmpty())
        QSKIP("SWITCHMAN_DECODE_DIR and SWITCHMAN_DECODE_OUT name a one-off comparison");
    QFile out(outPath);
    QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
    QStringList names = QDir(dir).entryList(QDir::Files, QDir::Name);
    int described = 0;
    for (const QString &name : names) {
        const QByteArray prefix = name.toLatin1();
        std::optional<wire::Api> api;
        for (wire::Api candidate : kInbound)
            if (prefix.startsWith(QByteArray(wire::apiName(candidate).data(), wire::apiName(candidate).size()) + '-'))
                api = candidate;
        if (!api)
            continue;
        QFile f(QDir(dir).filePath(name));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray body = f.readAll();
        out.write(header(*api, body) + describe(*api, body));
        ++described;
    }
    qInfo("%d bodies described", described);
}

QTEST_GUILESS_MAIN(TestDecodeGolden)
#include "test_decode_golden.moc"
