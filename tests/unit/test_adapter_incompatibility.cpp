// UpstreamAdapter::incompatibility: which fields of a converted request make a candidate
// unable to serve it (formats/translation_rules.md, "Incompatible candidates"), per
// inbound format and upstream API. The reason always names the field.

#include "core/formats/inbound_codec.h"
#include "core/upstream/upstream_adapter.h"
#include "wire_fixtures.h"

#include <QtEndian>
#include <QtTest>

using namespace sw::formats;
using namespace sw::upstream;
namespace wire = sw::wire;
using sw::test::spokenIn;

Q_DECLARE_METATYPE(wire::Api)

class TestAdapterIncompatibility : public QObject {
    Q_OBJECT
private slots:
    void reasons_data();
    void reasons();
};

void TestAdapterIncompatibility::reasons_data() {
    QTest::addColumn<wire::Api>("inbound");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("api");   // "api" or "api@upstream model id"
    QTest::addColumn<QString>("named"); // "" = compatible

    const auto chat = wire::Api::OpenAICompletions;
    const auto claude = wire::Api::AnthropicMessages;
    const auto responses = wire::Api::OpenAIResponses;
    const QByteArray user = R"("messages":[{"role":"user","content":"hi"}])";
    auto chatBody = [&](const char *extra) { return "{\"model\":\"m\"," + user + "," + QByteArray(extra) + "}"; };
    auto claudeBody = [&](const char *extra) {
        return "{\"model\":\"m\",\"max_tokens\":100," + user + "," + QByteArray(extra) + "}";
    };
    auto responsesBody = [&](const char *extra) {
        return "{\"model\":\"m\",\"input\":\"hi\"," + QByteArray(extra) + "}";
    };

    QTest::addRow("zero penalties change nothing")
        << chat << chatBody(R"("presence_penalty":0,"frequency_penalty":0)") << "anthropic-messages"
        << "";
    QTest::addRow("penalty to Messages") << chat << chatBody(R"("frequency_penalty":0.5)") << "anthropic-messages"
                                         << "frequency_penalty";
    // Probe G2 6: 150 tools (an MCP-heavy Claude Code) went to Chat, which takes 128 and refused
    // them with a 400 that ended the chain; Gemini takes 512, Messages and Responses state no limit.
    const auto tools = [](int n) {
        QByteArray out = R"("tools":[)";
        for (int i = 0; i < n; ++i)
            out += (i ? "," : "") + QByteArray(R"({"name":"t)") + QByteArray::number(i) +
                   R"(","input_schema":{"type":"object"}})";
        return out + "]";
    };
    const QByteArray tools128 = claudeBody(tools(128).constData());
    const QByteArray tools129 = claudeBody(tools(129).constData());
    const QByteArray tools513 = claudeBody(tools(513).constData());
    QTest::addRow("128 tools to Chat") << claude << tools128 << "openai-completions"
                                       << "";
    QTest::addRow("129 tools to Chat") << claude << tools129 << "openai-completions"
                                       << "tools: 129 function tools, past the 128";
    QTest::addRow("129 tools to Responses") << claude << tools129 << "openai-responses"
                                            << "";
    QTest::addRow("513 tools to Gemini") << claude << tools513 << "google-generative-ai"
                                         << "tools: 513 function tools, past the 512";
    QTest::addRow("513 tools to Responses") << claude << tools513 << "openai-responses"
                                            << "";
    QTest::addRow("513 tools to Messages, same API") << claude << tools513 << "anthropic-messages"
                                                     << "";
    QTest::addRow("penalty to Gemini is mapped")
        << chat << chatBody(R"("presence_penalty":0.5)") << "google-generative-ai"
        << "";
    QTest::addRow("top_k to Chat") << claude << claudeBody(R"("top_k":40)") << "openai-completions"
                                   << "top_k";
    QTest::addRow("top_k to Gemini is mapped") << claude << claudeBody(R"("top_k":40)") << "google-generative-ai"
                                               << "";
    QTest::addRow("allowed_tools choice")
        << responses
        << responsesBody(
               R"("tools":[{"type":"function","name":"f","parameters":{}}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]})")
        << "anthropic-messages"
        << "allowed_tools";
    QTest::addRow("named function choice is mapped")
        << chat
        << chatBody(
               R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}})")
        << "anthropic-messages"
        << "";
    QTest::addRow("n > 1") << chat << chatBody(R"("n":3)") << "google-generative-ai"
                           << "n: 3";
    QTest::addRow("n > 1, same API, streamed") << chat << chatBody(R"("n":3,"stream":true)") << "openai-completions"
                                               << "";
    QTest::addRow("n > 1, same API, one JSON answer") << chat << chatBody(R"("n":3)") << "openai-completions"
                                                      << "stream: true";
    QTest::addRow("MCP servers")
        << claude << claudeBody(R"("mcp_servers":[{"type":"url","url":"https://mcp.example.test/sse","name":"x"}])")
        << "openai-completions"
        << "mcp_servers";
    QTest::addRow("no MCP servers") << claude << claudeBody(R"("mcp_servers":[])") << "openai-completions"
                                    << "";
    // Anthropic's search takes a cap of one or more (max_uses); Gemini's has none.
    QTest::addRow("max_tool_calls with web search to Messages is its max_uses")
        << responses << responsesBody(R"("tools":[{"type":"web_search"}],"max_tool_calls":1)") << "anthropic-messages"
        << "";
    QTest::addRow("max_tool_calls 0 with web search")
        << responses << responsesBody(R"("tools":[{"type":"web_search"}],"max_tool_calls":0)") << "anthropic-messages"
        << "max_tool_calls";
    QTest::addRow("max_tool_calls with web search to Gemini")
        << responses << responsesBody(R"("tools":[{"type":"web_search"}],"max_tool_calls":1)") << "google-generative-ai"
        << "max_tool_calls";
    QTest::addRow("max_tool_calls without a built-in tool limits nothing")
        << responses << responsesBody(R"("max_tool_calls":1)") << "anthropic-messages"
        << "";
    QTest::addRow("audio output") << chat << chatBody(R"("modalities":["text","audio"])") << "anthropic-messages"
                                  << "modalities";
    QTest::addRow("stored prompt") << responses << responsesBody(R"("prompt":{"id":"pmpt_1"})") << "anthropic-messages"
                                   << "prompt";
    QTest::addRow("background") << responses << responsesBody(R"("background":true)") << "google-generative-ai"
                                << "background";
    QTest::addRow("web_search to Chat") << responses << responsesBody(R"("tools":[{"type":"web_search"}])")
                                        << "openai-completions"
                                        << "web_search";
    QTest::addRow("web_search to Messages is mapped")
        << responses << responsesBody(R"("tools":[{"type":"web_search"}])") << "anthropic-messages"
        << "";
    // Gemini refuses grounding beside function declarations with a 400 ("Tool use with function
    // calling is unsupported"); web search alone goes there.
    QTest::addRow("web_search alone to Gemini is mapped")
        << responses << responsesBody("\"tools\":[{\"type\":\"web_search\"}]") << "google-generative-ai"
        << "";
    QTest::addRow("web_search and a function to Gemini")
        << responses
        << responsesBody("\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":{}},"
                         "{\"type\":\"web_search\"}]")
        << "google-generative-ai"
        << "web_search together with function tools";
    QTest::addRow("Anthropic web search and a function to Gemini")
        << claude
        << claudeBody("\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}},"
                      "{\"type\":\"web_search_20250305\",\"name\":\"web_search\",\"max_uses\":5}]")
        << "google-generative-ai"
        << "web_search together with function tools";
    QTest::addRow("Chat web_search_options and a function to Gemini")
        << chat
        << chatBody("\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
                    "\"web_search_options\":{}")
        << "google-generative-ai"
        << "web_search together with function tools";
    // Probe L1 1: a web search's restrictions went nowhere on Gemini (its googleSearch takes no
    // domain filter, no count) and blocked_domains went nowhere on Responses (its filters allow only):
    // the answer was grounded in sites the client had kept out. Such a candidate is passed over.
    const char *claudeAllowed =
        R"("tools":[{"type":"web_search_20250305","name":"web_search","allowed_domains":["docs.python.org"]}])";
    const char *claudeBlocked =
        R"("tools":[{"type":"web_search_20250305","name":"web_search","blocked_domains":["evil.example"]}])";
    const char *claudeMaxUses = R"("tools":[{"type":"web_search_20250305","name":"web_search","max_uses":1}])";
    const char *claudeLocated =
        R"("tools":[{"type":"web_search_20250305","name":"web_search","user_location":{"type":"approximate","country":"GB"}}])";
    QTest::addRow("web search allowed_domains to Gemini")
        << claude << claudeBody(claudeAllowed) << "google-generative-ai"
        << "allowed_domains";
    QTest::addRow("web search allowed_domains to Responses is mapped")
        << claude << claudeBody(claudeAllowed) << "openai-responses"
        << "";
    QTest::addRow("web search blocked_domains to Gemini")
        << claude << claudeBody(claudeBlocked) << "google-generative-ai"
        << "blocked_domains";
    QTest::addRow("web search blocked_domains to Responses")
        << claude << claudeBody(claudeBlocked) << "openai-responses"
        << "blocked_domains";
    QTest::addRow("web search max_uses to Gemini") << claude << claudeBody(claudeMaxUses) << "google-generative-ai"
                                                   << "max_uses";
    QTest::addRow("web search max_uses to Responses is mapped")
        << claude << claudeBody(claudeMaxUses) << "openai-responses"
        << "";
    QTest::addRow("web search empty domain lists restrict nothing")
        << claude
        << claudeBody(
               R"("tools":[{"type":"web_search_20250305","name":"web_search","allowed_domains":[],"blocked_domains":null}])")
        << "google-generative-ai"
        << "";
    QTest::addRow("web search location to Gemini goes, named")
        << claude << claudeBody(claudeLocated) << "google-generative-ai"
        << "";
    QTest::addRow("Responses web search filters to Gemini")
        << responses
        << responsesBody(R"("tools":[{"type":"web_search","filters":{"allowed_domains":["docs.python.org"]}}])")
        << "google-generative-ai"
        << "allowed_domains";
    QTest::addRow("Responses web search filters to Messages is mapped")
        << responses
        << responsesBody(R"("tools":[{"type":"web_search","filters":{"allowed_domains":["docs.python.org"]}}])")
        << "anthropic-messages"
        << "";
    QTest::addRow("Chat web search context size to Gemini goes, named")
        << chat << chatBody(R"("web_search_options":{"search_context_size":"high"})") << "google-generative-ai"
        << "";
    QTest::addRow("web_search and a function to Messages is mapped")
        << responses
        << responsesBody("\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":{}},"
                         "{\"type\":\"web_search\"}]")
        << "anthropic-messages"
        << "";
    QTest::addRow("code_interpreter") << responses << responsesBody(R"("tools":[{"type":"code_interpreter"}])")
                                      << "anthropic-messages"
                                      << "code_interpreter";
    QTest::addRow("Anthropic bash tool") << claude << claudeBody(R"("tools":[{"type":"bash_20250124","name":"bash"}])")
                                         << "openai-responses"
                                         << "bash_20250124";
    QTest::addRow("json_object to Messages")
        << chat << chatBody(R"("response_format":{"type":"json_object"})") << "anthropic-messages"
        << "json_object";
    QTest::addRow("json_object to Gemini is mapped")
        << chat << chatBody(R"("response_format":{"type":"json_object"})") << "google-generative-ai"
        << "";
    // Documents (translation_rules.md, "Documents"): a file goes where the target can read it.
    auto responsesFile = [&](const char *part) {
        return "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[" + QByteArray(part) + "]}]}";
    };
    auto claudeDocument = [&](const char *document) {
        return "{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":[" +
               QByteArray(document) + "]}]}";
    };
    QTest::addRow("OpenAI file id to Messages")
        << responses << responsesFile(R"({"type":"input_file","file_id":"file-1"})") << "anthropic-messages"
        << "cannot resolve \"file-1\"";
    QTest::addRow("OpenAI file id to Chat")
        << responses << responsesFile(R"({"type":"input_file","file_id":"file-1"})") << "openai-completions"
        << "cannot resolve \"file-1\"";
    QTest::addRow("OpenAI file id to Responses")
        << chat
        << QByteArray(
               R"({"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]})")
        << "openai-responses"
        << "";
    QTest::addRow("input_file naming no file")
        << responses << responsesFile(R"({"type":"input_file","filename":"a.pdf"})") << "openai-completions"
        << "input_file";
    QTest::addRow("PDF by URL to Chat") << responses
                                        << responsesFile(
                                               R"({"type":"input_file","file_url":"https://docs.example.test/a.pdf"})")
                                        << "openai-completions"
                                        << "reads no file by URL";
    QTest::addRow("PDF by URL to Messages")
        << responses << responsesFile(R"({"type":"input_file","file_url":"https://docs.example.test/a.pdf"})")
        << "anthropic-messages"
        << "";
    QTest::addRow("a spreadsheet by URL to Messages")
        << responses << responsesFile(R"({"type":"input_file","file_url":"https://docs.example.test/t.xlsx"})")
        << "anthropic-messages"
        << "only as a PDF";
    QTest::addRow("a file by URL to Responses, translated")
        << claude
        << claudeDocument(R"({"type":"document","source":{"type":"url","url":"https://docs.example.test/t"}})")
        << "openai-responses"
        << "";
    QTest::addRow("a PDF in developer instructions")
        << responses
        << QByteArray(
               R"({"model":"m","input":[{"role":"developer","content":[{"type":"input_file","filename":"p.pdf","file_data":"data:application/pdf;base64,JVBERi0x"},{"type":"input_text","text":"follow this"}]},{"role":"user","content":"go"}]})")
        << "anthropic-messages"
        << "input_file";
    QTest::addRow("PDF by URL to Gemini")
        << claude
        << claudeDocument(R"({"type":"document","source":{"type":"url","url":"https://docs.example.test/a.pdf"}})")
        << "google-generative-ai"
        << "";
    QTest::addRow("Anthropic file id to Responses")
        << claude << claudeDocument(R"({"type":"document","source":{"type":"file","file_id":"file_01"}})")
        << "openai-responses"
        << "cannot resolve \"file_01\"";
    QTest::addRow("a spreadsheet to Messages")
        << responses
        << responsesFile(
               R"({"type":"input_file","filename":"t.xlsx","file_data":"data:application/vnd.openxmlformats-officedocument.spreadsheetml.sheet;base64,UEsDBA=="})")
        << "anthropic-messages"
        << "reads no application/vnd.openxmlformats";
    QTest::addRow("a spreadsheet from Chat to Responses")
        << chat
        << QByteArray(
               R"({"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"t.xlsx","file_data":"data:application/vnd.openxmlformats-officedocument.spreadsheetml.sheet;base64,UEsDBA=="}}]}]})")
        << "openai-responses"
        << "";
    QTest::addRow("document asking for citations")
        << claude
        << claudeDocument(
               R"({"type":"document","citations":{"enabled":true},"source":{"type":"text","media_type":"text/plain","data":"x"}})")
        << "openai-responses"
        << "document";
    QTest::addRow("document of content blocks")
        << claude
        << claudeDocument(R"({"type":"document","source":{"type":"content","content":[{"type":"text","text":"x"}]}})")
        << "google-generative-ai"
        << "document";
    QTest::addRow("plain-text document in a tool result goes as words")
        << claude << QByteArray(R"({"model":"m","max_tokens":10,"messages":[{"role":"user","content":"go"},
             {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
             {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[
               {"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}]}]}]})")
        << "openai-completions"
        << "";
    const QByteArray emptyUser = R"({"model":"m","messages":[{"role":"user","content":""}]})";
    QTest::addRow("empty conversation to Messages") << chat << emptyUser << "anthropic-messages"
                                                    << "no content";
    QTest::addRow("empty conversation to Gemini") << chat << emptyUser << "google-generative-ai"
                                                  << "no content";
    QTest::addRow("empty user turn to Chat is fine")
        << claude << QByteArray(R"({"model":"m","max_tokens":10,"messages":[{"role":"user","content":""}]})")
        << "openai-completions"
        << "";
    QTest::addRow("URL image to Gemini is mapped")
        << chat
        << QByteArray(
               R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.example/a.png"}}]}]})")
        << "google-generative-ai"
        << "";
    // Parts a converted request does not carry are never dropped in silence (an allow-list):
    // another API's shapes and future types make the candidate incompatible.
    auto chatParts = [&](const char *parts) {
        return "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[" + QByteArray(parts) + "]}]}";
    };
    QTest::addRow("Responses-shaped input_text in a Chat turn")
        << chat << chatParts(R"({"type":"text","text":"look"},{"type":"input_text","text":"the secret word"})")
        << "anthropic-messages"
        << "content part \"input_text\"";
    QTest::addRow("Responses-shaped input_image in a Chat turn")
        << chat << chatParts(R"({"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="})")
        << "google-generative-ai"
        << "content part \"input_image\"";
    QTest::addRow("a future part type in a Chat tool result")
        << chat
        << QByteArray(
               R"({"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"video_url","video_url":{"url":"https://x.example/v.mp4"}}]}]})")
        << "openai-responses"
        << "video_url";
    QTest::addRow("a Chat part with no type") << chat << chatParts(R"({"text":"hello"})") << "anthropic-messages"
                                              << "(no type)";
    QTest::addRow("input_text in an Anthropic turn")
        << claude << claudeDocument(R"({"type":"input_text","text":"the secret word"})") << "openai-completions"
        << "content part \"input_text\"";
    QTest::addRow("a future block in an Anthropic tool result")
        << claude
        << QByteArray(
               R"({"model":"m","max_tokens":10,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"tool_reference","tool_name":"g"}]}]}]})")
        << "openai-responses"
        << "tool_reference";
    QTest::addRow("a future part in a Responses message")
        << responses << responsesFile(R"({"type":"input_text","text":"hi"},{"type":"input_video","file_id":"v"})")
        << "anthropic-messages"
        << "input_video";
    // A stored item named by reference, or Codex's compacted history: what they hold is not in
    // the request, so a conversion would go without it (an earlier turn, the whole summary).
    QTest::addRow("a Responses item_reference")
        << responses
        << QByteArray("{\"model\":\"m\",\"input\":[{\"type\":\"item_reference\",\"id\":\"msg_abc\"},"
                      "{\"role\":\"user\",\"content\":\"and now?\"}]}")
        << "anthropic-messages"
        << "input item \"item_reference\"";
    QTest::addRow("a Responses compaction item")
        << responses
        << QByteArray("{\"model\":\"m\",\"input\":[{\"type\":\"compaction\",\"encrypted_content\":\"opaque\"},"
                      "{\"role\":\"user\",\"content\":\"go on\"}]}")
        << "openai-completions"
        << "input item \"compaction\"";
    // Messages takes images up to 5 MB of base64; OpenAI and Gemini take more.
    const QByteArray bigImage = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                                "\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64," +
                                QByteArray(6 * 1024 * 1024, 'A') + "\"}}]}]}";
    QTest::addRow("a 6 MB image to Messages") << chat << bigImage << "anthropic-messages"
                                              << "over the 5242880 bytes";
    QTest::addRow("a 6 MB image to Gemini") << chat << bigImage << "google-generative-ai"
                                            << "";
    // Messages takes at most 100 images and document pages a request ("Too much media: 0 document
    // pages + 102 images > 100"), OpenAI and Gemini more (probe R2-6): a screenshot agent's history.
    const auto images = [](int n) {
        QByteArray parts;
        for (int i = 0; i < n; ++i)
            parts += (i ? "," : "") +
                     QByteArray(R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}})");
        return R"({"model":"m","messages":[{"role":"user","content":[)" + parts + "]}]}";
    };
    QTest::addRow("100 images to Messages") << chat << images(100) << "anthropic-messages"
                                            << "";
    QTest::addRow("101 images to Messages") << chat << images(101) << "anthropic-messages"
                                            << "101 images and files, past the 100";
    QTest::addRow("101 images to Gemini") << chat << images(101) << "google-generative-ai"
                                          << "";
    QTest::addRow("100 images and a PDF to Messages")
        << chat
        << images(100).replace(
               "]}]}",
               R"(,{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}]})")
        << "anthropic-messages"
        << "101 images and files";
    // Messages refuses an image over 8000 px a side, and over 2000 px when the request has more than
    // 20 images (probe AC3-F1: a full-page screenshot, Retina screens in an agent's history); OpenAI
    // and Gemini scale it down. The size is read from the image's header.
    const auto pngOf = [](quint32 w, quint32 h) {
        QByteArray ihdr(8, '\0');
        qToBigEndian<quint32>(w, ihdr.data());
        qToBigEndian<quint32>(h, ihdr.data() + 4);
        return (QByteArray::fromHex("89504e470d0a1a0a0000000d49484452") + ihdr + QByteArray::fromHex("0802000000"))
            .toBase64();
    };
    const auto screenshots = [&](int n, quint32 w, quint32 h) {
        QByteArray parts;
        for (int i = 0; i < n; ++i)
            parts += (i ? "," : "") + QByteArray(R"({"type":"image_url","image_url":{"url":"data:image/png;base64,)") +
                     pngOf(w, h) + "\"}}";
        return R"({"model":"m","messages":[{"role":"user","content":[)" + parts + "]}]}";
    };
    QTest::addRow("a 1440x8570 screenshot to Messages") << chat << screenshots(1, 1440, 8570) << "anthropic-messages"
                                                        << "image of 1440x8570 pixels: over the 8000 pixels a side";
    QTest::addRow("a 1440x8000 screenshot to Messages") << chat << screenshots(1, 1440, 8000) << "anthropic-messages"
                                                        << "";
    QTest::addRow("a 1440x8570 screenshot to Chat") << chat << screenshots(1, 1440, 8570) << "openai-completions"
                                                    << "";
    QTest::addRow("a 1440x8570 screenshot to Gemini") << chat << screenshots(1, 1440, 8570) << "google-generative-ai"
                                                      << "";
    QTest::addRow("a 9000 px wide screenshot from a Responses client to Messages")
        << responses
        << R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,)" +
               pngOf(9000, 900) + "\"}]}]}"
        << "anthropic-messages"
        << "image of 9000x900 pixels";
    QTest::addRow("20 Retina screenshots to Messages") << chat << screenshots(20, 2880, 1800) << "anthropic-messages"
                                                       << "";
    QTest::addRow("21 Retina screenshots to Messages")
        << chat << screenshots(21, 2880, 1800) << "anthropic-messages"
        << "21 images, one of them 2880 pixels a side, past the 2000 pixels a side";
    QTest::addRow("21 Retina screenshots to Chat") << chat << screenshots(21, 2880, 1800) << "openai-completions"
                                                   << "";
    QTest::addRow("21 screenshots of 2000 px to Messages")
        << chat << screenshots(21, 2000, 1250) << "anthropic-messages"
        << "";
    // An image whose header says no size (here a PNG cut before its IHDR) goes as it is.
    QTest::addRow("21 images of no known size to Messages") << chat << images(21) << "anthropic-messages"
                                                            << "";
    // Messages refuses a tool's top-level property name outside ^[a-zA-Z0-9_.-]{1,64}$, which Gemini
    // and OpenAI take (OpenAPI-made MCP tools: "filter[id]", "Account Number"; probe R2-4). Nested
    // names are not checked there; a top-level combinator's branches become top-level properties.
    const auto tool = [&](const char *parameters) {
        return chatBody((R"("tools":[{"type":"function","function":{"name":"list_apps","parameters":)" +
                         QByteArray(parameters) + "}}]")
                            .constData());
    };
    const char *bracketKey = R"({"type":"object","properties":{"filter[id]":{"type":"string"}}})";
    QTest::addRow("a bracketed property name to Messages") << chat << tool(bracketKey) << "anthropic-messages"
                                                           << "\"list_apps\" has a parameter named \"filter[id]\"";
    QTest::addRow("a bracketed property name to Gemini") << chat << tool(bracketKey) << "google-generative-ai"
                                                         << "";
    QTest::addRow("a spaced property name in a branch to Messages")
        << chat << tool(R"({"anyOf":[{"type":"object","properties":{"Account Number":{"type":"string"}}}]})")
        << "anthropic-messages"
        << "\"Account Number\"";
    QTest::addRow("a 65-character property name to Messages")
        << chat << tool(("{\"type\":\"object\",\"properties\":{\"" + QByteArray(65, 'k') + "\":{}}}").constData())
        << "anthropic-messages"
        << "up to 64";
    QTest::addRow("a nested bracketed property name to Messages")
        << chat
        << tool(
               R"({"type":"object","properties":{"filter.id":{"type":"object","properties":{"a[b]":{"type":"string"}}}}})")
        << "anthropic-messages"
        << "";
    // A trailing assistant turn: Messages and Gemini continue it, Chat and Responses answer anew.
    const QByteArray claudePrefill("{\"model\":\"m\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\","
                                   "\"content\":\"Is 7 prime?\"},{\"role\":\"assistant\",\"content\":\"The answer "
                                   "is\"}]}");
    QTest::addRow("a Messages prefill to Chat") << claude << claudePrefill << "openai-completions"
                                                << "ends with an assistant turn";
    QTest::addRow("a Messages prefill to Responses") << claude << claudePrefill << "openai-responses"
                                                     << "ends with an assistant turn";
    QTest::addRow("a Messages prefill to Gemini, which continues it too")
        << claude << claudePrefill << "google-generative-ai"
        << "";
    const QByteArray chatTrailing("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
                                  "{\"role\":\"assistant\",\"content\":\"Hello!\"}]}");
    QTest::addRow("a Chat trailing assistant turn to Messages") << chat << chatTrailing << "anthropic-messages"
                                                                << "would continue as a prefill";
    QTest::addRow("a Chat trailing assistant turn to Gemini") << chat << chatTrailing << "google-generative-ai"
                                                              << "would continue as a prefill";
    QTest::addRow("a Chat trailing assistant turn to Responses") << chat << chatTrailing << "openai-responses"
                                                                 << "";
    QTest::addRow("an assistant turn that ends in a call is no prefill")
        << claude
        << QByteArray("{\"model\":\"m\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\",\"content\":"
                      "\"hi\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Looking.\"},"
                      "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}]},{\"role\":"
                      "\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":"
                      "\"ok\"}]}],\"tools\":[{\"name\":\"f\",\"input_schema\":{}}]}")
        << "openai-completions"
        << "";
    // What the conversions carry (or leave out by rule) stays compatible.
    QTest::addRow("Chat text, image and refusal parts are carried")
        << chat
        << QByteArray(
               R"({"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"be brief"}]},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},{"role":"assistant","content":[{"type":"text","text":"b"},{"type":"refusal","refusal":"no"}]},{"role":"user","content":"c"}]})")
        << "anthropic-messages"
        << "";
    QTest::addRow("Anthropic server tool blocks in history are left out by rule")
        << claude
        << QByteArray(
               R"({"model":"m","max_tokens":10,"messages":[{"role":"user","content":"search"},{"role":"assistant","content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"s1","content":[]},{"type":"thinking","thinking":"t","signature":"x"},{"type":"redacted_thinking","data":"r"},{"type":"text","text":"found"}]},{"role":"user","content":[{"type":"text","text":"more"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]})")
        << "openai-responses"
        << "";
    QTest::addRow("Responses reasoning, outputs and tool outputs are carried")
        << responses
        << QByteArray(
               R"({"model":"m","input":[{"role":"developer","content":[{"type":"input_text","text":"be brief"}]},{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"https://x.example/a.png"}]},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"content":[{"type":"reasoning_text","text":"r"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"b","annotations":[]}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"ok"}]},{"type":"web_search_call","id":"ws_1","status":"completed"}]})")
        << "anthropic-messages"
        << "";
    // Structured outputs on Messages compile a subset of JSON Schema (anthropic_schema.h): a loose
    // schema is closed on the way, but "any object" or "any value" has no form there.
    QTest::addRow("loose schema to Messages is shaped")
        << chat
        << chatBody(
               R"("response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","properties":{"city":{"type":"string","minLength":2}}}}})")
        << "anthropic-messages"
        << "";
    QTest::addRow("object of any members to Messages")
        << responses
        << responsesBody(
               R"("text":{"format":{"type":"json_schema","name":"w","strict":false,"schema":{"type":"object","properties":{"meta":{"type":"object"}}}}})")
        << "anthropic-messages"
        << "$.properties.meta is an object of any members";
    QTest::addRow("any value to Messages")
        << chat
        << chatBody(
               R"("response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","properties":{"x":{"description":"anything"}},"additionalProperties":false}}})")
        << "anthropic-messages"
        << "$.properties.x allows any value";
    // Messages compiles the strict schemas of a request within request-wide limits (16 union-typed
    // parameters): a Pydantic-style strict answer of 17 Optional fields has no form there on its own.
    QByteArray nullable;
    QByteArray names;
    for (int k = 0; k < 17; ++k) {
        nullable += QByteArray(k ? "," : "") + "\"f" + QByteArray::number(k) + "\":{\"type\":[\"string\",\"null\"]}";
        names += QByteArray(k ? "," : "") + "\"f" + QByteArray::number(k) + "\"";
    }
    const QByteArray nullableFormat =
        R"("response_format":{"type":"json_schema","json_schema":{"name":"w","strict":true,"schema":{"type":"object","properties":{)" +
        nullable + R"(},"required":[)" + names + R"(],"additionalProperties":false}}})";
    QTest::addRow("17 union-typed fields to Messages") << chat << chatBody(nullableFormat) << "anthropic-messages"
                                                       << "17 of a union type";
    QTest::addRow("17 union-typed fields to Responses") << chat << chatBody(nullableFormat) << "openai-responses"
                                                        << "";
    QTest::addRow("any object to Gemini is mapped")
        << chat
        << chatBody(R"("response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"}}})")
        << "google-generative-ai"
        << "";
    // Gemini before 3 refuses function calling beside a JSON answer.
    const char *toolsAndJson =
        R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"response_format":{"type":"json_object"})";
    QTest::addRow("tools and JSON to Gemini 2.5")
        << chat << chatBody(toolsAndJson) << "google-generative-ai@gemini-2.5-flash"
        << "tools together with a JSON answer";
    QTest::addRow("tools and JSON to Gemini 1.5, path form")
        << chat << chatBody(toolsAndJson) << "google-generative-ai@models/gemini-1.5-pro"
        << "tools together with a JSON answer";
    QTest::addRow("tools and JSON to Gemini 3")
        << chat << chatBody(toolsAndJson) << "google-generative-ai@gemini-3-pro-preview"
        << "";
    QTest::addRow("tools and JSON to an alias")
        << chat << chatBody(toolsAndJson) << "google-generative-ai@gemini-flash-latest"
        << "";
    QTest::addRow("JSON alone to Gemini 2.5")
        << chat << chatBody(R"("response_format":{"type":"json_object"})") << "google-generative-ai@gemini-2.5-flash"
        << "";
    // An iPhone photo (HEIC; bytes that are none of PNG, JPEG, GIF or WebP keep their declared type)
    // is read by Gemini alone: Messages and OpenAI answer 400, which no failover gets past.
    const QByteArray heic =
        R"("messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/heic;base64,AAAAGGZ0eXBoZWljAAAAAA=="}},{"type":"text","text":"what is this"}]}])";
    for (const char *api : {"anthropic-messages", "openai-responses"})
        QTest::addRow("HEIC image to %s", api) << chat << chatBody("").replace(user, heic) << api << "image/heic";
    QTest::addRow("HEIC image to Gemini") << chat << chatBody("").replace(user, heic) << "google-generative-ai"
                                          << "";
    const QByteArray gif =
        R"("messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGODlhAQABAAAAACw="}}]}])";
    QTest::addRow("GIF image to Gemini") << chat << chatBody("").replace(user, gif) << "google-generative-ai"
                                         << "image/gif";
    QTest::addRow("GIF image to Messages") << chat << chatBody("").replace(user, gif) << "anthropic-messages"
                                           << "";
    // Messages refuses text of whitespace alone: a last user turn of nothing else cannot go there;
    // a tool result of whitespace alone is sent empty, and whitespace after tool results is left out.
    const QByteArray blank =
        R"("messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yes"},{"role":"user","content":" 
"}])";
    QTest::addRow("a last user turn of whitespace to Messages")
        << chat << chatBody("").replace(user, blank) << "anthropic-messages"
        << "whitespace";
    QTest::addRow("a last user turn of whitespace to Gemini")
        << chat << chatBody("").replace(user, blank) << "google-generative-ai"
        << "";
    // An empty last user turn is left out for Gemini, which would then continue the model's last
    // words as a prefill instead of answering (probe R2-3); whitespace goes to Gemini as it is, and
    // an empty turn after the user's own words leaves the user's turn last.
    const QByteArray empty =
        R"("messages":[{"role":"user","content":"Write a haiku"},{"role":"assistant","content":"Soft rain"},{"role":"user","content":""}])";
    QTest::addRow("an empty last user turn to Gemini")
        << chat << chatBody("").replace(user, empty) << "google-generative-ai"
        << "the last user turn is empty";
    QTest::addRow("an empty last user turn to Gemini, from Responses")
        << responses
        << QByteArray(
               R"({"model":"m","input":[{"role":"user","content":"Write a haiku"},{"role":"assistant","content":"Soft rain"},{"role":"user","content":[{"type":"input_text","text":""}]}]})")
        << "google-generative-ai"
        << "continues as a prefill";
    QTest::addRow("an empty user turn after the user's words to Gemini")
        << chat
        << chatBody("").replace(user, R"("messages":[{"role":"user","content":"hi"},{"role":"user","content":""}])")
        << "google-generative-ai"
        << "";
    const QByteArray blankResult =
        R"("messages":[{"role":"user","content":"run"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"sh","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_0","content":"
"},{"role":"user","content":" "}])";
    QTest::addRow("a blank tool result and blank words after it to Messages")
        << chat << chatBody("").replace(user, blankResult) << "anthropic-messages"
        << "";
    // Probe Y3-F1: a voice app's audio answer given back by its id alone (OpenAI's audio guide): only
    // OpenAI knows what was said. With its transcript it goes as the turn's words.
    const QByteArray audioTurn =
        R"("messages":[{"role":"user","content":"Tell me a joke."},{"role":"assistant","content":null,"audio":{"id":"audio_abc"}},{"role":"user","content":"Explain it."}])";
    QTest::addRow("an audio answer by its id alone to Messages")
        << chat << chatBody("").replace(user, audioTurn) << "anthropic-messages"
        << "messages[1].audio: an audio answer without its transcript";
    QTest::addRow("an audio answer by its id alone to Gemini")
        << chat << chatBody("").replace(user, audioTurn) << "google-generative-ai"
        << "messages[1].audio";
    QTest::addRow("an audio answer by its id alone to Chat, same API")
        << chat << chatBody("").replace(user, audioTurn) << "openai-completions"
        << "";
    QTest::addRow("an audio answer with its transcript to Responses")
        << chat
        << chatBody("").replace(user, QByteArray(audioTurn).replace(R"("id":"audio_abc")",
                                                                    R"("id":"audio_abc","transcript":"Knock knock.")"))
        << "openai-responses"
        << "";
    QTest::addRow("an audio answer beside the turn's own words to Messages")
        << chat << chatBody("").replace(user, QByteArray(audioTurn).replace("null", R"("Knock knock.")"))
        << "anthropic-messages"
        << "";
    QTest::addRow("Anthropic file id to Gemini")
        << claude
        << claudeBody("").replace(
               user,
               R"("messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_01"}}]}])")
        << "google-generative-ai"
        << "file_01";
}

void TestAdapterIncompatibility::reasons() {
    QFETCH(wire::Api, inbound);
    QFETCH(QByteArray, body);
    QFETCH(QString, api);
    QFETCH(QString, named);
    sw::model::GatewayError error;
    const auto request = codecFor(inbound).decode(body.replace(",}", "}"), &error);
    QVERIFY2(request, qPrintable(error.message));
    const QString model = api.section(QLatin1Char('@'), 1);
    const auto why =
        adapterFor(api.section(QLatin1Char('@'), 0, 0))->incompatibility(spokenIn(*request, inbound), model);
    if (named.isEmpty()) {
        QVERIFY2(!why, qPrintable(why.value_or(QString())));
        return;
    }
    QVERIFY2(why && why->contains(named), qPrintable(why.value_or(QStringLiteral("(compatible)"))));
}

QTEST_GUILESS_MAIN(TestAdapterIncompatibility)
#include "test_adapter_incompatibility.moc"
