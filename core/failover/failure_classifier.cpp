#include "core/failover/failure_classifier.h"

#include "core/credentials/park_policy.h"

#include "core/util/duration.h"

#include <QDateTime>
#include <QHash>
#include <QLocale>
#include <QRegularExpression>
#include <QTimeZone>
#include <QVarLengthArray>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sw::failover {

QString failureKindName(FailureKind k) {
    switch (k) {
    case FailureKind::Transport:
        return QStringLiteral("transport");
    case FailureKind::ServerError:
        return QStringLiteral("server_error");
    case FailureKind::RateLimited:
        return QStringLiteral("rate_limited");
    case FailureKind::CredentialExhausted:
        return QStringLiteral("credential_exhausted");
    case FailureKind::NotServed:
        return QStringLiteral("not_served");
    case FailureKind::SetupError:
        return QStringLiteral("setup_error");
    }
    return QStringLiteral("server_error");
}

std::optional<FailureKind> failureKindFromName(const QString &name) {
    for (auto k : {FailureKind::Transport, FailureKind::ServerError, FailureKind::RateLimited,
                   FailureKind::CredentialExhausted, FailureKind::NotServed, FailureKind::SetupError})
        if (failureKindName(k) == name)
            return k;
    return std::nullopt;
}

namespace {

// OpenRouter's 402s that refuse one request's size (refusesTheRequestsSize), not the account.
constexpr const char *kRefusesTheRequestsSize =
    "or fewer max_?tokens|can only afford \\d|(prompt|max_?)\\W?tokens limit exceeded";
// A server that wants the reasoning of its tool-call turns sent back (DeepSeek's thinking mode, Kimi).
constexpr const char *kAsksForReasoningBack =
    "missing\\W{0,3}reasoning_content|reasoning_content\\W{0,3}(field )?(is )?(required|missing)"
    "|reasoning_content\\W{0,3}(in the thinking mode )?must be passed back";
// OpenAI's refusal of a reasoning summary: an organisation not verified ("Your organization must be
// verified to generate reasoning summaries"), or a model that takes none ("Unsupported value:
// 'reasoning.summary' ...").
constexpr const char *kRefusesReasoningSummary = "reasoning\\W?summar";
// Mistral's refusal of a tool call id that is not nine characters of [a-zA-Z0-9]: mistral_common's
// validator ("Tool call id was toolu_01AAA but must be a-z, A-Z, 0-9, with a length of 9.", Mistral's
// API, vLLM's mistral tokenizer mode) and Mistral's chat templates behind vLLM, llama.cpp or LM Studio
// ("Tool call IDs should be alphanumeric strings with length 9!").
constexpr const char *kRefusesToolCallIds =
    "must be a-z,\\s?a-z,\\s?0-9,?\\s?with a length of 9|tool call ids? should be alphanumeric strings? with "
    "(a )?length( of)? 9";
// A 400 that says the provider does not serve the model asked for: Groq's retired models
// ("model_decommissioned: The model `…` has been decommissioned"), LM Studio with no model loaded
// ("No models loaded. Please load a model …"), OpenAI-compatible servers that send OpenAI's
// model_not_found with a 400. The same said as a 404 fails over; probe X1 F3 found the route's
// fallback never asked.
constexpr const char *kRefusesTheModel =
    "model_(decommissioned|not_found)|no models? (is |are )?loaded"
    // The model named, then what became of it: not "For this model, `functions` is no longer
    // supported", a request's own error.
    "|\\bthe model\\W{1,2}[\\w./:@-]+\\W{0,2} (has been decommissioned|is no longer (supported|available)"
    "|does not exist|is not loaded)";
// A 400 that says this provider does not hold the conversation state the request names: OpenAI's
// previous_response_not_found ("Previous response with id 'resp_…' not found."), or a conversation
// another provider of the Responses API made. Each provider holds its own; the one that made it may
// be further down the chain (probe X3 F1). Not an item by reference: "Item with id 'msg_…' not
// found" is also OpenAI's answer to a client that sent store: false, its own error to see.
constexpr const char *kLacksTheConversation =
    "previous_response_not_found|conversation_not_found"
    "|(previous response|conversation) with id\\W{0,2}[\\w.-]+\\W{0,2} not found";

// A 401 whose words say the key itself is wrong, not that it may not use one model: invalid,
// revoked, expired or missing (namesTheModel).
constexpr const char *kKeyItselfWrong =
    "\\b(invalid|incorrect|wrong|malformed|unknown|missing|no)\\W{1,3}((x-)?api[ _-]?)?(key|token|credential|auth)"
    "|\\b(key|token|credential)s?\\W{1,3}(is |was |has been )?(invalid|not valid|revoked|expired|disabled"
    "|deactivated|blocked|not found)|expired key|authentication_error|invalid authentication";

// Patterns are compiled once per thread (QRegularExpression compiles and JITs
// on first use, which costs far more than the match itself).
const QRegularExpression &compiled(const char *pattern) {
    thread_local QHash<const char *, QRegularExpression> cache;
    auto it = cache.find(pattern);
    if (it == cache.end())
        it = cache.insert(pattern,
                          QRegularExpression(QString::fromLatin1(pattern), QRegularExpression::CaseInsensitiveOption));
    return *it;
}

bool matches(const QString &text, const char *pattern) {
    return compiled(pattern).match(text).hasMatch();
}

// The words a failure is read by: the upstream's message with the request's own words masked where
// the caller did so (classificationMessage), else the message as it came.
const QString &wordsOf(const FailureInput &in) {
    return in.classificationMessage.isEmpty() ? in.message : in.classificationMessage;
}

// A refusal said with one of the given statuses, in words that match the pattern.
bool says(const FailureInput &in, std::initializer_list<int> statuses, const char *pattern) {
    return in.status && std::find(statuses.begin(), statuses.end(), *in.status) != statuses.end() &&
           matches(wordsOf(in), pattern);
}

// A peer-supplied number of milliseconds as a sane delay: non-finite and negative
// values are dropped, huge ones clamped before the cast (a cast of inf is UB).
std::optional<qint64> clampedMs(double ms) {
    if (!std::isfinite(ms) || ms < 0)
        return std::nullopt;
    return qint64(std::min(ms, double(FailureClassifier::kMaxRetryAfterMs)));
}

// An HTTP-date (RFC 9110 5.6.7) as epoch ms: the IMF-fixdate every server should send
// ("Wed, 02 Dec 2026 01:22:05 GMT"), RFC 850's and asctime's obsolete forms, and RFC 2822
// with a numeric zone. Qt's RFC 2822 reader takes no "GMT", the zone the standard requires.
std::optional<qint64> httpDateMs(const QByteArray &value) {
    QString v = QString::fromLatin1(value.simplified());
    if (v.endsWith(QLatin1String(" GMT")) || v.endsWith(QLatin1String(" UTC")))
        v = v.chopped(4) + QStringLiteral(" +0000");
    QDateTime when = QDateTime::fromString(v, Qt::RFC2822Date);
    if (!when.isValid()) {
        // "Sunday, 06-Nov-94 08:49:37 +0000" and "Sun Nov 6 08:49:37 1994" (simplified spaces).
        static const QRegularExpression rfc850(QStringLiteral("^[A-Za-z]+, (\\d{2})-([A-Za-z]{3})-(\\d{2}) (.*)$"));
        if (const auto m = rfc850.match(v); m.hasMatch()) {
            const int yy = m.captured(3).toInt();
            // RFC 9110: a two-digit year more than 50 years ahead is in the past century.
            const int year = 2000 + yy > QDate::currentDate().year() + 50 ? 1900 + yy : 2000 + yy;
            when = QDateTime::fromString(
                QStringLiteral("%1 %2 %3 %4").arg(m.captured(1), m.captured(2)).arg(year).arg(m.captured(4)),
                Qt::RFC2822Date);
        } else {
            when = QDateTime::fromString(v, QStringLiteral("ddd MMM d HH:mm:ss yyyy"));
            when.setTimeZone(QTimeZone::utc());
        }
    }
    if (!when.isValid())
        return std::nullopt;
    return when.toMSecsSinceEpoch();
}

} // namespace

RateLimitReason FailureClassifier::parseRateLimitReason(const QString &text) {
    // Substring matches anywhere in the text: the retryable gate
    // in classify() keeps "500 inside 205000" from mattering.
    if (matches(text, "concurren"))
        return RateLimitReason::ConcurrentLimit;
    if (matches(text, "rate.?limit|too many requests|429"))
        return RateLimitReason::RateLimitExceeded;
    if (matches(text, "capacity|overloaded|529"))
        return RateLimitReason::ModelCapacityExhausted;
    if (matches(text, "500|502|503|504|server.?error|internal.?error|service.?unavailable|bad gateway|api_error"))
        return RateLimitReason::ServerError;
    return RateLimitReason::Unknown;
}

bool FailureClassifier::isRetryable(const QString &text) {
    return matches(text, "overloaded|rate.?limit|too many requests|concurren|capacity|\\b(429|500|502|503|504|529)\\b"
                         "|service.?unavailable|server.?error|internal.?error|bad gateway|api_error"
                         "|connection|reset|socket|network|timed? ?out|terminated|other side closed|stream ended");
}

bool FailureClassifier::refusesTheRequestsSize(std::optional<int> status, const QString &text) {
    return status == 402 && matches(text, kRefusesTheRequestsSize);
}

bool FailureClassifier::isUsageLimit(std::optional<int> status, const QString &text) {
    if (refusesTheRequestsSize(status, text))
        return false;
    if (credentials::usageWording(text))
        return true;
    // 402 Payment Required is a usage limit whatever its body says (OpenRouter's "Insufficient
    // credits", an OpenAI-compatible server's own words). An opaque 429 (no rate-limit or
    // concurrency wording) reads as one too.
    if (status == 402)
        return true;
    return status == 429 && parseRateLimitReason(text) == RateLimitReason::Unknown;
}

bool FailureClassifier::refusesReplayedReasoning(const FailureInput &in) {
    return says(in, {400},
                "invalid\\W{0,2}(signature|data)\\W{0,2} in\\W{0,2}(redacted_)?thinking"
                "|invalid_encrypted_content|encrypted content.{0,200}could not be verified"
                "|(corrupted|invalid) thought.?signature|thought.?signature is (not valid|invalid)"
                // A reasoning item by id alone (store: true, no encrypted_content), which only the
                // provider that made it holds: "Item with id 'rs_…' not found" (probe X3 F2).
                "|item with id\\W{0,2}rs_\\w+\\W{0,2} not found");
}

bool FailureClassifier::asksForReasoningBack(const FailureInput &in) {
    return says(in, {400}, kAsksForReasoningBack);
}

bool FailureClassifier::refusesReasoningSummary(const FailureInput &in) {
    return says(in, {400}, kRefusesReasoningSummary);
}

bool FailureClassifier::refusesToStream(const FailureInput &in) {
    return says(in, {400}, "verified to stream");
}

bool FailureClassifier::refusesTheModel(const FailureInput &in) {
    return says(in, {400}, kRefusesTheModel);
}

bool FailureClassifier::lacksTheConversation(const FailureInput &in) {
    return says(in, {400, 404}, kLacksTheConversation);
}

bool FailureClassifier::refusesToolCallIds(const FailureInput &in) {
    // A 400 (Mistral's API, vLLM), a 422 (Mistral's validation errors), or a 500 (a template's
    // exception where the server reports it as its own).
    return says(in, {400, 422, 500}, kRefusesToolCallIds);
}

namespace {

// Characters of an error and of the request the echo check examined on this thread (withoutEchoes):
// what judging an error costs, as a test counts it.
thread_local qint64 echoSteps = 0;

char16_t folded(QChar c) {
    return c.toCaseFolded().unicode();
}

// Every substring of one text, as a suffix automaton: how much of a string's start the text holds
// costs that many steps, whatever the text's size.
class Substrings {
public:
    explicit Substrings(QStringView text) {
        for (const QChar c : text)
            extend(c.unicode());
    }

    // The longest start of `s`, folded, that the text holds (the text is folded too).
    qsizetype longestStart(QStringView s) const {
        int state = 0;
        qsizetype n = 0;
        for (; n < s.size(); ++n) {
            ++echoSteps;
            const auto next = m_states.at(state).next.constFind(folded(s.at(n)));
            if (next == m_states.at(state).next.cend())
                break;
            state = *next;
        }
        return n;
    }

private:
    struct State {
        int length = 0;
        int link = -1;
        QHash<char16_t, int> next;
    };
    QList<State> m_states{State{}};
    int m_last = 0;

    void extend(char16_t c) {
        const int added = int(m_states.size());
        m_states.append(State{m_states.at(m_last).length + 1, -1, {}});
        int p = m_last;
        for (; p != -1 && !m_states.at(p).next.contains(c); p = m_states.at(p).link)
            m_states[p].next.insert(c, added);
        if (p == -1) {
            m_states[added].link = 0;
        } else if (const int q = m_states.at(p).next.value(c); m_states.at(p).length + 1 == m_states.at(q).length) {
            m_states[added].link = q;
        } else {
            State clone = m_states.at(q);
            clone.length = m_states.at(p).length + 1;
            const int cloned = int(m_states.size());
            m_states.append(clone);
            for (; p != -1 && m_states.at(p).next.value(c, -1) == q; p = m_states.at(p).link)
                m_states[p].next.insert(c, cloned);
            m_states[q].link = cloned;
            m_states[added].link = cloned;
        }
        m_last = added;
    }
};

// A phrase where it stands, with up to 8 folded characters on each side (closest first): `before`
// of them before the phrase, `after` after, packed so that a lookup compares them at once.
struct Window {
    int phrase = 0;
    int before = 0;
    int after = 0;
    quint64 low = 0;
    quint64 high = 0;
    bool operator==(const Window &o) const = default;
};
size_t qHash(const Window &w, size_t seed = 0) {
    return qHashMulti(seed, w.phrase, w.before, w.after, w.low, w.high);
}

// The characters around one occurrence of the words (in the error, or in a request string).
struct Around {
    char16_t before[8]; // closest first
    char16_t after[8];
    int beforeCount = 0;
    int afterCount = 0;

    Around(QStringView s, qsizetype start, qsizetype end) {
        beforeCount = int(std::min<qsizetype>(8, start));
        afterCount = int(std::min<qsizetype>(8, s.size() - end));
        for (int i = 0; i < beforeCount; ++i)
            before[i] = folded(s.at(start - 1 - i));
        for (int i = 0; i < afterCount; ++i)
            after[i] = folded(s.at(end + i));
        echoSteps += beforeCount + afterCount;
    }

    // The window of `before` and `after` characters, when this occurrence has that many.
    std::optional<Window> window(int phrase, int b, int a) const {
        if (b > beforeCount || a > afterCount)
            return std::nullopt;
        Window w{phrase, b, a};
        int slot = 0;
        const auto put = [&](char16_t c) {
            (slot < 4 ? w.low : w.high) |= quint64(c) << (16 * (slot % 4));
            ++slot;
        };
        for (int i = 0; i < b; ++i)
            put(before[i]);
        for (int i = 0; i < a; ++i)
            put(after[i]);
        return w;
    }
};

} // namespace

qint64 FailureClassifier::echoCheckSteps() {
    return echoSteps;
}

QString FailureClassifier::withoutEchoes(const QString &whole, const RequestStrings &strings) {
    // Quoted: the text holds a request string from its start through the words; or, where the words
    // stand in the text, what is around them agrees with what is around them in a request string
    // for kQuoteContext characters (a provider that quotes 20 characters from the middle of a message,
    // or its last N, quotes no start: probes EV 2, EV2 1), or for 8 where that reaches the string's
    // end: a prompt that ends "...show me your credit balance" is no quote in "Your credit balance is
    // too low" (probe EV2 2), a provider's "...then my credit balance" is.
    //
    // A provider's refusal is a sentence or two. Only the first kJudgedChars are judged (and returned):
    // a 60 KB error that repeated "usage limit" held the engine, and every tenant, for seconds on a
    // large request, each match checked against every request string (probe AB2 F3). The request is
    // read once for each distinct phrase, the first kMaxPhrases of them (a refusal says a few); past
    // them the words are taken for echoes, never for the provider's own. Each match is then judged by
    // lookups of the characters around it, not by another pass over the request.
    constexpr qsizetype kJudgedChars = 4096;
    constexpr int kMaxPhrases = 16;
    constexpr int kQuoteContext = 6;
    constexpr int kEdgeContext = 8;
    QString text = whole.left(kJudgedChars);
    if (text.size() == kJudgedChars && text.back().isHighSurrogate())
        text.chop(1);
    echoSteps += text.size();

    struct Match {
        qsizetype start;
        qsizetype end;
        int phrase = -1; // past kMaxPhrases: not judged
    };
    QList<Match> found;
    const auto scan = [&](const QRegularExpression &re) {
        for (auto it = re.globalMatch(text); it.hasNext();) {
            const QRegularExpressionMatch m = it.next();
            if (m.capturedLength() > 0)
                found.append({m.capturedStart(), m.capturedEnd()});
        }
    };
    for (const QRegularExpression *re : credentials::credentialSignalPatterns())
        scan(*re);
    // The deciding words of the 400s and 402s read here: a prompt that says "no models loaded", quoted
    // back in a 400, must not send every request on; a tenant's prompt quoted in a spent key's 402 must
    // not make it read as a size refusal, which keeps the key in use (probe GV 3).
    for (const char *pattern : {kAsksForReasoningBack, kRefusesReasoningSummary, kRefusesToolCallIds, kRefusesTheModel,
                                kLacksTheConversation, kRefusesTheRequestsSize})
        scan(compiled(pattern));
    if (found.isEmpty())
        return text;
    std::sort(found.begin(), found.end(), [](const Match &a, const Match &b) { return a.start < b.start; });

    QString foldedText(text.size(), Qt::Uninitialized);
    for (qsizetype i = 0; i < text.size(); ++i)
        foldedText[i] = QChar(folded(text.at(i)));
    QHash<QString, int> phraseIds;
    QStringList phrases;
    for (Match &m : found) {
        const QString phrase = foldedText.mid(m.start, m.end - m.start);
        if (const auto it = phraseIds.constFind(phrase); it != phraseIds.cend()) {
            m.phrase = *it;
        } else if (phrases.size() < kMaxPhrases) {
            m.phrase = int(phrases.size());
            phraseIds.insert(phrase, m.phrase);
            phrases.append(phrase);
        }
    }

    // What the request holds of each phrase: quoted from a string's start, and the windows around the
    // matches that its occurrences share, kEdgeContext characters of context (anywhere) and
    // kQuoteContext (with what follows in the string: the context reaching the string's end needs
    // kEdgeContext). Only the matches' windows are kept, however varied the request's are.
    struct Followed {
        bool byMore = false;                 // two characters or more after the window
        QVarLengthArray<char16_t, 2> byLast; // the string's last character, one after the window
    };
    struct Heard {
        bool fromAStart = false;
        QHash<Window, bool> edgeWindows;
        QHash<Window, Followed> quoteWindows;
    };
    QList<Heard> heard(phrases.size());
    for (const Match &m : std::as_const(found)) {
        if (m.phrase < 0)
            continue;
        const Around around(foldedText, m.start, m.end);
        for (int b = 0; b <= kEdgeContext; ++b)
            if (const auto w = around.window(m.phrase, b, kEdgeContext - b))
                heard[m.phrase].edgeWindows.insert(*w, false);
        for (int b = 0; b <= kQuoteContext; ++b)
            if (const auto w = around.window(m.phrase, b, kQuoteContext - b))
                heard[m.phrase].quoteWindows.insert(*w, {});
    }
    const Substrings inText(foldedText);
    for (const QString &s : strings()) {
        qsizetype heldStart = -1; // how much of the string's start the text holds, once asked
        for (int id = 0; id < phrases.size(); ++id) {
            Heard &h = heard[id];
            if (h.fromAStart)
                continue;
            const QString &phrase = phrases.at(id);
            echoSteps += s.size();
            bool first = true;
            for (qsizetype at = s.indexOf(phrase, 0, Qt::CaseInsensitive); at >= 0;
                 at = s.indexOf(phrase, at + 1, Qt::CaseInsensitive)) {
                const qsizetype end = at + phrase.size();
                // The string's start through the phrase's first occurrence, held by the text, is a quote
                // (the start through a later one holds it).
                if (std::exchange(first, false) && end <= foldedText.size()) {
                    if (heldStart < 0)
                        heldStart = inText.longestStart(QStringView(s).left(foldedText.size()));
                    if (heldStart >= end) {
                        h.fromAStart = true;
                        break;
                    }
                }
                const Around around(s, at, end);
                for (int b = 0; b <= kEdgeContext; ++b)
                    if (const auto w = around.window(id, b, kEdgeContext - b))
                        if (const auto e = h.edgeWindows.find(*w); e != h.edgeWindows.end())
                            *e = true;
                for (int b = 0; b <= kQuoteContext; ++b) {
                    const int a = kQuoteContext - b;
                    const auto w = around.window(id, b, a);
                    const auto f = w ? h.quoteWindows.find(*w) : h.quoteWindows.end();
                    if (f == h.quoteWindows.end())
                        continue;
                    const qsizetype rest = s.size() - end - a;
                    if (rest >= 2)
                        f->byMore = true;
                    else if (rest == 1 && f->byLast.size() < 2 && !f->byLast.contains(around.after[a]))
                        f->byLast.append(around.after[a]);
                }
            }
        }
    }

    const auto quoted = [&](const Match &m) {
        if (m.phrase < 0)
            return true;
        const Heard &h = heard.at(m.phrase);
        if (h.fromAStart)
            return true;
        const Around around(foldedText, m.start, m.end);
        for (int b = 0; b <= kEdgeContext; ++b)
            if (const auto w = around.window(m.phrase, b, kEdgeContext - b); w && h.edgeWindows.value(*w))
                return true;
        for (int b = 0; b <= kQuoteContext; ++b) {
            const int a = kQuoteContext - b;
            const auto w = around.window(m.phrase, b, a);
            const auto f = w ? h.quoteWindows.constFind(*w) : h.quoteWindows.cend();
            if (f == h.quoteWindows.cend())
                continue;
            // Agreement that stops before the string's end: the string goes on past the window by two
            // characters or more, or by one that the text does not have next.
            if (f->byMore)
                return true;
            const qsizetype next = m.end + a;
            for (const char16_t last : f->byLast)
                if (next == foldedText.size() || foldedText.at(next).unicode() != last)
                    return true;
        }
        return false;
    };
    // Masked from the end, overlaps merged: "…" stands where the request's own words stood.
    QString out;
    qsizetype at = 0;
    for (const Match &m : found) {
        if (!quoted(m) || m.end <= at)
            continue;
        if (m.start >= at)
            out.append(QStringView(text).mid(at, m.start - at)).append(QChar(0x2026));
        at = m.end;
    }
    return out.append(QStringView(text).mid(at));
}

std::optional<int> FailureClassifier::outputMaximum(const FailureInput &in) {
    const QString &text = wordsOf(in);
    if (in.status == 402 && refusesTheRequestsSize(in.status, text)) {
        thread_local const QRegularExpression afford(QStringLiteral("can only afford\\s*(\\d{1,9})\\b"),
                                                     QRegularExpression::CaseInsensitiveOption);
        const QRegularExpressionMatch m = afford.match(text);
        // Credit for a sliver of an answer is no answer: the request fails over (NotServed) rather than
        // come back cut to a dozen tokens as if whole (probe GV 2).
        if (const int most = m.hasMatch() ? m.captured(1).toInt() : 0; most >= kLeastAffordableOutput)
            return most;
        return std::nullopt;
    }
    if (in.status != 400 && in.status != 422)
        return std::nullopt;
    if (!matches(text, "max_?(output_|completion_)?tokens|maxOutputTokens|output tokens"))
        return std::nullopt;
    // The forms providers use, each with the number that is the most the model takes; a subtraction
    // (vLLM: the context left after the prompt) and an exclusive bound are worked out.
    struct Form {
        const char *pattern;
        // 0: the number; -1: the number less one; 1: the first number less the second; 2: the
        // second less the first
        int adjust;
    };
    static const Form forms[] = {
        {"\\b\\d+\\s*>\\s*(\\d+)\\s*-\\s*(\\d+)", 1},   // vLLM: (100000 > 32768 - 50)
        {"\\b(\\d+)\\s*\\+\\s*\\d+\\s*>\\s*(\\d+)", 2}, // Anthropic: 197000 + 64000 > 200000 (context)
        {"tokens\\W{0,3}\\s*\\d+\\s*>\\s*(\\d+)", 0},   // Anthropic: max_tokens: 64000 > 8192, which is the maximum
        {"at most\\s*`?(\\d+)", 0},                     // OpenAI: supports at most 16384 completion tokens
        {"less than or equal to\\s*`?(\\d+)", 0},       // Groq: must be less than or equal to `8192`
        {"<=\\s*`?(\\d+)", 0},                          // OpenAI: Expected a value <= 128000
        {"\\[\\s*1\\s*,\\s*(\\d+)\\s*\\]", 0},          // DeepSeek: the valid range of max_tokens is [1, 8192]
        {"to\\s*(\\d+)\\s*\\(exclusive\\)", -1},        // Vertex: from 1 (inclusive) to 65537 (exclusive)
    };
    for (const Form &form : forms) {
        const QRegularExpressionMatch m = compiled(form.pattern).match(text);
        if (!m.hasMatch())
            continue;
        bool ok = false;
        qint64 most = m.captured(1).toLongLong(&ok);
        if (ok && form.adjust == 1)
            most -= m.captured(2).toLongLong(&ok);
        else if (ok && form.adjust == 2)
            most = m.captured(2).toLongLong(&ok) - most;
        else if (form.adjust == -1)
            most -= 1;
        if (ok && most >= 1 && most <= std::numeric_limits<int>::max())
            return int(most);
        return std::nullopt;
    }
    return std::nullopt;
}

bool FailureClassifier::refusesTheKey(const FailureInput &in) {
    const QString &text = wordsOf(in);
    if (in.usageLimit || isUsageLimit(in.status, text) || in.modelOutOfReach)
        return false;
    // A page (a WAF's block, a CDN's region block) is no word on the key: it answers this request,
    // perhaps for its content, and setting the shared key aside would let one tenant's prompt steer
    // every tenant off the provider for a minute (probe Q2 F3). Its words on the key still count above.
    // Nor is a refusal of the request's content (refusesTheContent): one tenant's prompt would set the
    // shared key aside for every tenant, for an hour where the text names the key's id (probe S2 F1).
    return credentials::rejectsTheKey(in.status, text) || credentials::refusesTheAccount(in.status, text) ||
           (in.status == 403 && !isConcurrencyCap(text) && !isPage(text) &&
            !credentials::refusesTheContent(in.status, text));
}

bool FailureClassifier::refusesTheContent(const FailureInput &in) {
    const QString &text = wordsOf(in);
    return !isPage(text) && credentials::refusesTheContent(in.status, text);
}

bool FailureClassifier::tooLargeForTheRateLimit(const FailureInput &in) {
    if (in.status != 429)
        return false;
    const QString &text = wordsOf(in);
    // OpenAI says so ("Request too large for gpt-4o ... on tokens per min (TPM): Limit 30000, Requested
    // 43090. The input or output tokens must be reduced in order to run successfully."); Anthropic's
    // words are those of any token limit ("would exceed the rate limit ... Please reduce the prompt
    // length ... or try again later"): only a budget its headers show untouched tells them apart.
    return matches(text, "request too large for|must be reduced in order to run") ||
           (in.quotaUntouched && matches(text, "reduce the prompt|prompt length|too large|must be reduced"));
}

bool FailureClassifier::isPage(const QString &text) {
    return matches(text, "<html|<!doctype");
}

bool FailureClassifier::namesTheModel(int status, const QString &text, const QString &modelId) {
    if ((status != 401 && status != 403) || modelId.isEmpty())
        return false;
    // A page (a WAF's, Google's HTML 403 that quotes the URL, which names a Gemini model) is no
    // verdict on a model, nor is a refusal that does not speak of access.
    if (isPage(text) || !matches(text, "access|permission|not allowed|not permitted|not available|unavailable|entitle"
                                       "|authori[sz]ed|enabled for|(may|can)not use|can't use"))
        return false;
    // A 401 refuses the key, unless its words are about one model alone (LiteLLM's per-key model
    // list: "key not allowed to access model. ... Tried to access gpt-5"): one that also says the key
    // itself is wrong stays the key's verdict. The model id is left out of that reading: the tenant
    // chose it, and a model named "invalid-api-key" must not decide for the key.
    if (status == 401 &&
        matches(QString(text).replace(modelId, QStringLiteral("\u2026"), Qt::CaseInsensitive), kKeyItselfWrong))
        return false;
    // A word of its own: "gpt-4o" is not named by "gpt-4o-mini", nor "o3" by "proj_o3x"; a full stop
    // after it ends the sentence ("… to model gpt-4.1.") unless a name goes on after it.
    auto partOfAName = [](QChar c) { return c.isLetterOrNumber() || c == u'-' || c == u'_' || c == u'.'; };
    for (qsizetype at = text.indexOf(modelId); at >= 0; at = text.indexOf(modelId, at + 1)) {
        const qsizetype end = at + modelId.size();
        // The request's own body echoed back ({"model":"gpt-4o",…}) names nothing.
        const QStringView before = QStringView(text).left(at).right(12);
        if (before.endsWith(u"\"model\":\"") || before.endsWith(u"\"model\": \""))
            continue;
        const bool startsAWord = at == 0 || !partOfAName(text.at(at - 1));
        const bool endsAWord =
            end == text.size() || !partOfAName(text.at(end)) ||
            (text.at(end) == u'.' && (end + 1 == text.size() || !text.at(end + 1).isLetterOrNumber()));
        // A one-character id ("x") is a word of its own in any sentence: it counts only where a
        // model's name stands, after "model", "models/", "access" or "use" ("Tried to access x",
        // "access to model `x`"). Found nowhere else, the refusal's words about the key parked it for
        // an hour for every tenant (probe AB2 F1).
        static const QRegularExpression modelsPlace(QStringLiteral("\\b(models?|access|use)\\W{0,3}$"),
                                                    QRegularExpression::CaseInsensitiveOption);
        if (startsAWord && endsAWord &&
            (modelId.size() > 1 || modelsPlace.match(QStringView(text).left(at).right(16)).hasMatch()))
            return true;
    }
    return false;
}

bool FailureClassifier::reportsALoop(const FailureInput &in) {
    const QString &text = wordsOf(in);
    // 508 Loop Detected says so, or says nothing; a shared host's "508 Resource Limit Is Reached" is a
    // server's trouble like a 503 (probe D2 L1: it stopped the route and blamed the baseUrl).
    if (in.status == 508)
        return text.trimmed().isEmpty() || matches(text, "\\bloop");
    if (in.status && *in.status < 500)
        return false;
    // A Switchman that had sent its stream's headers before its upstream answered 508 reports the
    // loop in band, where only its words are left (server::HopMarker's, AttemptLoop's).
    return matches(text, "\\b508 loop detected\\b|\\bloop detected: this request has already passed through");
}

bool FailureClassifier::isConcurrencyCap(const QString &text) {
    return matches(text, "concurren");
}

std::optional<UpstreamFailure> FailureClassifier::classify(const FailureInput &in) {
    const QString &text = wordsOf(in);
    auto make = [&](FailureKind k) {
        UpstreamFailure f;
        f.kind = k;
        f.status = in.status;
        f.message = in.message.isEmpty() ? text : in.message;
        // The headers' or the body's own delay; without either, a hint in the words.
        f.retryAfterMs = in.statedDelayMs();
        if (!f.retryAfterMs)
            f.retryAfterMs = retryHintFromText(text);
        return std::optional<UpstreamFailure>(f);
    };

    // record row "No status; any other reason (connect, DNS, TLS, socket close)": the
    // transport's type decides, never its wording (Qt's "Host ... not found" once slipped by).
    // An error status the upstream did send is its answer, whatever became of the body after it
    // (a 503 with a broken chunk marks the model, not the host): the status rows decide.
    const bool errorStatus = in.status && *in.status >= 400;
    // The gateway's own resources ran out before anything was sent (no descriptor for a socket): a
    // setup of this try that failed, never the upstream's mark (probe V2 F4 marked a healthy host).
    if (in.transportError == upstream::TransportError::Local)
        return make(FailureKind::SetupError);
    if (in.transportError && *in.transportError != upstream::TransportError::None && !errorStatus)
        return make(FailureKind::Transport);
    // A loop of gateways (reportsALoop): every retry or failover would go round again, and each
    // hop's retries multiply the next one's. It stops.
    if (reportsALoop(in))
        return std::nullopt;
    // One request larger than a per-minute token limit (tooLargeForTheRateLimit): the request's own
    // size, the quota untouched. Another candidate may take it; nothing is down, nothing marked.
    if (!in.usageLimit && tooLargeForTheRateLimit(in))
        return make(FailureKind::NotServed);
    // A quota of one model, used up (Gemini's per-minute and per-day quotas are each model's own, and
    // its words are those of a spent quota): the model's rate limit, with the stated delay. Another
    // model on the same key has its own quota; setting the key aside skipped the route's next
    // Gemini model for the whole delay, and told a lone candidate's client its quota was spent
    // for a limit that lifts in seconds (probe V1 F1, F5).
    if (in.status == 429 && in.quotaOfOneModel)
        return make(FailureKind::RateLimited);
    if (in.usageLimit || isUsageLimit(in.status, text))
        return make(FailureKind::CredentialExhausted);
    // Too large for the credit left: another candidate may take it; nothing is down, nothing marked.
    if (refusesTheRequestsSize(in.status, text))
        return make(FailureKind::NotServed);
    if (in.status) {
        const int s = *in.status;
        if (s < 400)
            return std::nullopt; // a redirect (or any other non-error) is not an outage: stop
        if (refusesTheKey(in))
            return make(FailureKind::CredentialExhausted);
        // A refusal of what this request carries (a content check, a file it names): the requester's
        // answer, as a 400 content_filter is. No failover, no mark, the key stays in service.
        if (s == 403 && refusesTheContent(in))
            return std::nullopt;
        if ((s == 401 || s == 403) && in.modelOutOfReach && !isConcurrencyCap(text))
            return make(FailureKind::NotServed);
        // A 403 page (refusesTheKey): this request's refusal, a mark for this tenant alone.
        if (s == 403 && isPage(text))
            return make(FailureKind::ServerError);
        if (s == 403 || s == 429)
            return make(FailureKind::RateLimited);
        if (s == 404)
            return make(FailureKind::NotServed);
        // A request larger than this provider takes (Anthropic's request_too_large, the stock 413 page
        // of an nginx in front of a self-hosted server, whose body limit is 1 MiB by default): the
        // request's size for this provider alone, as its 429 over a per-minute token limit is.
        // Another candidate may take it; nothing is down, nothing marked (probe Z1 F1: the chain
        // stopped there on every request of that size, its fallback never asked).
        if (s == 413)
            return make(FailureKind::NotServed);
        // The model does not stream to this account (refusesToStream): not the request's error, nor
        // the provider's outage. The chain stopped there on every request, its fallback never asked
        // (probe V1 F4); another candidate may serve it, nothing is marked.
        if (refusesToStream(in))
            return make(FailureKind::NotServed);
        // The provider does not serve the model (refusesTheModel), said with a 400 where others
        // send a 404: another candidate may, nothing is marked.
        if (refusesTheModel(in))
            return make(FailureKind::NotServed);
        // The conversation state the request names is another provider's (lacksTheConversation):
        // the one that holds it may be next.
        if (lacksTheConversation(in))
            return make(FailureKind::NotServed);
        if (s < 500 && s != 408)
            return std::nullopt;
        return make(FailureKind::ServerError);
    }
    if (!isRetryable(text))
        return std::nullopt;
    switch (parseRateLimitReason(text)) {
    case RateLimitReason::RateLimitExceeded:
    case RateLimitReason::ConcurrentLimit:
        return make(FailureKind::RateLimited);
    case RateLimitReason::ModelCapacityExhausted:
    case RateLimitReason::ServerError:
        return make(FailureKind::ServerError);
    case RateLimitReason::Unknown:
        break;
    }
    // An in-band error arrived over a working connection: whatever it says about
    // sockets, the base URL answered, so it marks the model, not the whole host.
    return make(FailureKind::ServerError);
}

namespace {
// A header's delay as a plain decimal number (RFC 9110 delay-seconds are digits; "3.5" is read too).
// toDouble also took "1e9", "inf" and "0x10": one malformed value set the provider's key aside for
// the 7-day cap, for every tenant (probe P2). Such a value says no delay; the default applies.
std::optional<double> plainNumber(const QByteArray &value) {
    const QByteArray v = value.trimmed();
    qsizetype digits = 0;
    bool point = false;
    for (const char c : v) {
        if (c >= '0' && c <= '9')
            ++digits;
        else if (c == '.' && !point)
            point = true;
        else
            return std::nullopt;
    }
    if (digits == 0)
        return std::nullopt;
    bool ok = false;
    const double d = v.toDouble(&ok);
    return ok ? d : std::numeric_limits<double>::max(); // digits past a double's range: huge (capped)
}
} // namespace

bool FailureClassifier::quotaUntouched(const upstream::HeaderList &headers) {
    // OpenAI's x-ratelimit-remaining-tokens / x-ratelimit-limit-tokens, Anthropic's
    // anthropic-ratelimit-input-tokens-remaining / -limit (and its other budgets).
    bool untouched = false;
    for (const auto &[rawName, value] : headers) {
        const QByteArray name = rawName.toLower();
        QByteArray limitName;
        if (name.startsWith("x-ratelimit-remaining-"))
            limitName = "x-ratelimit-limit-" + name.mid(qsizetype(qstrlen("x-ratelimit-remaining-")));
        else if (name.startsWith("anthropic-ratelimit-") && name.endsWith("-remaining"))
            limitName = name.chopped(qsizetype(qstrlen("-remaining"))) + "-limit";
        else
            continue;
        const auto remaining = plainNumber(value);
        if (!remaining)
            continue;
        if (*remaining <= 0)
            return false; // a budget spent: a limit reached, whatever the others say
        const auto limit = plainNumber(upstream::headerValue(headers, limitName));
        if (limit && *limit > 0 && *remaining >= *limit && name.contains("tokens"))
            untouched = true;
    }
    return untouched;
}

std::optional<qint64> FailureClassifier::retryAfterFromHeaders(const upstream::HeaderList &headers, qint64 nowEpochMs,
                                                               int status) {
    // The provider's own Retry-After says when to ask again, and nothing else overrides it: OpenAI's
    // 429 "try again in 494 ms" (retry-after-ms 494, retry-after 1) also says when its token bucket is
    // full again (x-ratelimit-reset-tokens 1m0s), and taking the largest made the client wait 61 s
    // and marked the provider for a minute (probe W2 F4). retry-after-ms is the finer of the two, as
    // the OpenAI SDKs read it.
    // A value that is no wait (negative, not a number) is passed over.
    if (auto v = upstream::headerValue(headers, "retry-after-ms"); !v.isEmpty())
        if (const auto ms = plainNumber(v))
            if (const auto wait = clampedMs(*ms))
                return wait;
    if (auto v = upstream::headerValue(headers, "retry-after"); !v.isEmpty()) {
        const auto secs = plainNumber(v);
        const auto when = secs ? std::nullopt : httpDateMs(v);
        if (const auto wait = secs   ? clampedMs(*secs * 1000)
                              : when ? clampedMs(double(*when - nowEpochMs))
                                     : std::nullopt)
            return wait;
    }
    // The rate-limit headers describe the key's budgets, sent on every answer: they say when to ask
    // again only on a rate limit's refusal. A 503 with quota left read its sooner reset as a 90 s
    // wait: not retried, the client told to wait, the provider marked 90 s (probe W2 F3).
    if (status != 429)
        return std::nullopt;
    std::optional<qint64> best;
    auto take = [&](double ms) {
        if (const auto clamped = clampedMs(ms))
            best = std::max(best.value_or(0), *clamped);
    };
    auto resetValue = [&](double v) -> double {
        if (v > 1e12)
            return v - double(nowEpochMs);
        if (v > 1e9)
            return v * 1000 - double(nowEpochMs);
        return v * 1000;
    };
    // OpenAI's per-dimension resets ("6m0s"): the one whose quota is spent (remaining 0) says
    // when the limit lifts; another dimension's later reset is no reason to wait, nor is any reset
    // when every remaining count is above 0.
    std::optional<qint64> soonest;
    bool remainingKnown = false;
    for (const char *dim : {"requests", "tokens"}) {
        const QByteArray remaining = upstream::headerValue(headers, QByteArray("x-ratelimit-remaining-") + dim);
        const auto left = plainNumber(remaining);
        remainingKnown |= left.has_value();
        const auto reset = util::parseGoDuration(
            QString::fromLatin1(upstream::headerValue(headers, QByteArray("x-ratelimit-reset-") + dim).trimmed()));
        if (!reset)
            continue;
        if (left && *left == 0)
            take(double(*reset));
        soonest = std::min(soonest.value_or(*reset), *reset);
    }
    if (!remainingKnown && soonest) // no remaining counts: the soonest reset is the one certain wait
        take(double(*soonest));
    if (auto v = upstream::headerValue(headers, "x-ratelimit-reset-ms"); !v.isEmpty()) {
        if (const auto ms = plainNumber(v))
            take(*ms);
    }
    if (auto v = upstream::headerValue(headers, "x-ratelimit-reset"); !v.isEmpty()) {
        if (const auto raw = plainNumber(v))
            take(resetValue(*raw));
    }
    return best;
}

std::optional<qint64> FailureClassifier::retryHintFromText(const QString &text) {
    static const QRegularExpression re(
        QStringLiteral(
            "(?:try again|retry|retry after|reset|resets|available)\\s+(?:in|after)\\s+(\\d+(?:\\.\\d+)?)\\s*"
            "(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\\b"),
        QRegularExpression::CaseInsensitiveOption);
    const auto m = re.match(text);
    if (!m.hasMatch())
        return std::nullopt;
    const double v = m.captured(1).toDouble();
    const QString unit = m.captured(2).toLower();
    if (unit.startsWith(QLatin1String("ms")) || unit.startsWith(QLatin1String("milli")))
        return clampedMs(v);
    if (unit.startsWith(QLatin1Char('m')))
        return clampedMs(v * 60000);
    return clampedMs(v * 1000);
}

} // namespace sw::failover
