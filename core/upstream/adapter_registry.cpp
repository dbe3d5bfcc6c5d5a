// The upstream adapter registry: one shared, stateless adapter per upstream API.
#include "upstream/anthropic_adapter.h"
#include "upstream/google_adapter.h"
#include "upstream/openai_completions_adapter.h"
#include "upstream/openai_responses_adapter.h"
#include "upstream/upstream_adapter.h"

namespace sw::upstream {

const UpstreamAdapter *adapterFor(const QString &api) {
    static const AnthropicAdapter anthropic;
    static const OpenAICompletionsAdapter openAICompletions;
    static const OpenAIResponsesAdapter openAIResponses;
    static const GoogleAdapter google;
    // Adding an API: a static instance above and one line here.
    static const UpstreamAdapter *const adapters[] = {&anthropic, &openAICompletions, &openAIResponses, &google};
    for (const UpstreamAdapter *a : adapters)
        if (a->api() == api)
            return a;
    return nullptr;
}

} // namespace sw::upstream
