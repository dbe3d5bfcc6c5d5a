// The top-level JSON splice on arbitrary bodies. For every body Qt parses as an object, the
// splice either declines or gives bytes Qt parses to that object with the edited members set;
// on Qt's own compact writing of the object (no duplicates, no escaped keys) it never declines.
// Then the same-API passthrough of each adapter: the body it splices parses to what the old
// whole-object path writes.
#include "core/formats/inbound_codec.h"
#include "core/upstream/upstream_adapter.h"
#include "core/wire/json_splice.h"
#include "fuzz_common.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdlib>

namespace {

void check(bool ok) {
    if (!ok)
        std::abort();
}

QJsonObject parsedObject(const QByteArray &json, bool *ok) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    *ok = error.error == QJsonParseError::NoError && doc.isObject();
    return doc.object();
}

void checkSplice(const QByteArray &json, const QJsonObject &object) {
    // Replace or append model, stream and stream_options, and also the body's own first key
    // (any value type, at any position) when it is one that needs no escaping.
    const QByteArray model = sw::wire::jsonString(u"fuzz \"model\"");
    QList<sw::wire::JsonMemberEdit> edits{
        {"model", model}, {"stream", "true"}, {"stream_options", R"({"include_usage":true})"}};
    QJsonObject expected = object;
    expected.insert(QStringLiteral("model"), QStringLiteral("fuzz \"model\""));
    expected.insert(QStringLiteral("stream"), true);
    expected.insert(QStringLiteral("stream_options"), QJsonObject{{QStringLiteral("include_usage"), true}});
    bool plainKeys = true;
    for (auto it = object.begin(); it != object.end(); ++it)
        plainKeys &= !sw::wire::jsonString(it.key()).contains('\\');
    QByteArray firstKey;
    if (!object.isEmpty() && plainKeys) {
        firstKey = object.begin().key().toUtf8();
        if (firstKey != "model" && firstKey != "stream" && firstKey != "stream_options") {
            edits.append({firstKey, "[0,{\"a\":\"}\"}]"});
            expected.insert(QString::fromUtf8(firstKey), QJsonDocument::fromJson("[0,{\"a\":\"}\"}]").array());
        }
    }
    // And the body's last key taken out, with the comma that joined it.
    QByteArray lastKey;
    if (object.size() > 1 && plainKeys) {
        lastKey = (object.end() - 1).key().toUtf8();
        if (lastKey != firstKey && lastKey != "model" && lastKey != "stream" && lastKey != "stream_options") {
            edits.append(sw::wire::JsonMemberEdit::removal(lastKey));
            expected.remove(QString::fromUtf8(lastKey));
        }
    }
    if (const std::optional<QByteArray> out =
            sw::wire::spliceTopLevel(json, std::span(edits.constData(), edits.size()))) {
        bool ok = false;
        check(parsedObject(*out, &ok) == expected && ok);
    }
    const QByteArray compact = QJsonDocument(object).toJson(QJsonDocument::Compact);
    const std::optional<QByteArray> out = sw::wire::spliceTopLevel(compact, std::span(edits.constData(), edits.size()));
    check(out.has_value() || !plainKeys);
    if (out) {
        bool ok = false;
        check(parsedObject(*out, &ok) == expected && ok);
    }
}

// The adapter's body for a request decoded from `json` in its own API, spliced (rawBody set)
// and through the old whole-object path (rawBody cleared): the same JSON.
void checkPassthrough(const QByteArray &json, sw::wire::Api api) {
    sw::model::GatewayError error;
    std::optional<sw::model::ChatRequest> request = sw::formats::codecFor(api).decode(json, &error);
    if (!request)
        return;
    const sw::upstream::UpstreamAdapter *adapter = sw::upstream::adapterFor(sw::wire::apiName(api));
    sw::upstream::Target target;
    target.provider = QStringLiteral("fuzz");
    target.modelId = QStringLiteral("up/\"model\"");
    target.api = sw::wire::apiName(api);
    target.baseUrl = QStringLiteral("http://127.0.0.1:1/v1");
    const sw::upstream::HttpRequest spliced = adapter->buildRequest(*request, target, {});
    request->rawBody.clear();
    const sw::upstream::HttpRequest whole = adapter->buildRequest(*request, target, {});
    bool okSpliced = false;
    bool okWhole = false;
    check(parsedObject(spliced.body, &okSpliced) == parsedObject(whole.body, &okWhole) && okSpliced && okWhole);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const QByteArray json = sw::fuzz::bytes(data, size);
    bool isObject = false;
    const QJsonObject object = parsedObject(json, &isObject);
    // Bytes Qt refuses never reach an adapter; the splice must only not crash on them.
    (void)sw::wire::spliceTopLevel(json, {{"model", "\"m\""}});
    if (!isObject)
        return 0;
    checkSplice(json, object);
    for (const sw::wire::Api api :
         {sw::wire::Api::OpenAICompletions, sw::wire::Api::AnthropicMessages, sw::wire::Api::OpenAIResponses})
        checkPassthrough(json, api);
    return 0;
}
