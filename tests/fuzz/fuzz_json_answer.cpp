// A whole JSON answer to a stream request (a server that ignores `stream: true`): the body as
// the events of its API's stream (upstream::eventsOfJsonAnswer), then read by that API's stream
// decoder as a real stream would be. The first byte picks the API; the rest is the body.
#include "core/upstream/json_answer.h"
#include "core/upstream/upstream_adapter.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    static constexpr sw::wire::Api kApis[] = {sw::wire::Api::OpenAICompletions, sw::wire::Api::AnthropicMessages,
                                              sw::wire::Api::OpenAIResponses, sw::wire::Api::Google};
    const sw::wire::Api api = kApis[data[0] % 4];
    const QByteArray body = sw::fuzz::bytes(data + 1, size - 1);
    const auto events = sw::upstream::eventsOfJsonAnswer(api, body);
    if (!events)
        return 0;
    const auto *adapter = sw::upstream::adapterFor(sw::wire::apiName(api));
    sw::upstream::Target target;
    target.provider = QStringLiteral("fuzz");
    target.modelId = QStringLiteral("fuzz-model");
    target.api = adapter->api();
    auto decoder =
        adapter->makeDecoder(target, data[0] & 4 ? sw::upstream::NativeBody::Skip : sw::upstream::NativeBody::Keep);
    for (const auto &event : *events)
        decoder->feed(event);
    decoder->finish();
    return 0;
}
