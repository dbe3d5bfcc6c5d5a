// The upstream adapter registry: one shared, stateless adapter per upstream API.
#include "upstream/anthropic_adapter.h"
#include "upstream/google_adapter.h"
#include "upstream/openai_completions_adapter.h"
#include "upstream/openai_responses_adapter.h"
#include "upstream/upstream_adapter.h"

#include <QUrl>

namespace sw::upstream {

QString modelPathSegment(const QString &modelId) {
    // Everything but RFC 3986 unreserved characters is encoded: "/" is %2F, "?" %3F, "#" %23.
    return QString::fromLatin1(QUrl::toPercentEncoding(modelId));
}

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
