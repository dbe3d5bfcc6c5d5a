#pragma once
// A key an upstream writes into a streamed answer a few characters a delta, as a model writes tokens,
// stands whole in no delta: a scrub of each event alone cannot see it, and the client joins the
// pieces (probe Q3 F3). DeltaSecretScrub follows each block's deltas of one streamed answer:
//  - a form of the key that ends in a delta is redacted there, though it began in an earlier one
//    (what of it the earlier deltas showed, at most kMinHeldPrefix - 1 characters, is gone);
//  - a delta's tail of kMinHeldPrefix characters or more that may begin a form is held back and goes
//    at the front of the block's next delta, or alone before the block's end (redacted when it is
//    8 characters or more: a key cut short is still most of the key).
// So a key split anywhere reaches the client as "[redacted]", after at most its first three
// characters, which every key of a provider shares ("sk-"). Ordinary text is held back only when
// it ends like the start of the key, which it almost never does past three characters.
//
// A same-API client gets the upstream's own frames: rewriteFrame writes a frame again with its
// deltas as apply() left them, and a held tail released alone goes as a copy of the block's last
// delta frame.

#include "core/model/chat.h"
#include "core/upstream/sse_reader.h"

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

#include <map>
#include <optional>
#include <variant>

namespace sw::upstream {

class DeltaSecretScrub final {
public:
    static constexpr qsizetype kMinHeldPrefix = 4;

    // `forms`: the key as answer text would hold it (util::secretTextForms), each matched in any case.
    explicit DeltaSecretScrub(QStringList forms);

    bool active() const { return !m_forms.isEmpty(); }

    // Rewrites the deltas of `events` in place and inserts, before a block's *_End (before a Done or
    // an Error: every block's), what that block still holds as a delta of its own. True when any
    // event changed or was added.
    bool apply(QList<model::StreamEvent> &events);

    // After apply() changed `events`: the upstream's frame `frame` (its data as it will be relayed)
    // with each changed delta rewritten, and before it a frame for each delta apply() added; nothing
    // when the frame could not be read or matched (the caller keeps it as it was, redacted whole).
    std::optional<QByteArray> rewriteFrame(const SseEvent &frame, const QList<model::StreamEvent> &events);

private:
    using PathStep = std::variant<QString, qsizetype>;
    struct RawTemplate {
        SseEvent frame;
        QJsonObject data;
        QList<PathStep> path; // where the delta stands in `data`
    };
    struct Block {
        QString shown;           // the last (longest form - 1) characters the client got of the block
        QString held;            // a tail that may begin a form, not sent yet
        model::StreamEvent like; // the delta `held` came in, for the one that releases it alone
        std::optional<RawTemplate> raw;
    };
    struct Edit {
        qsizetype event;  // index in the events after apply()
        QString upstream; // the delta as the upstream wrote it; empty for an added one
        bool added = false;
        std::optional<RawTemplate> like; // an added one's: the frame its text was held back from
    };

    QString scrubDelta(Block &b, const QString &delta);
    void release(QList<model::StreamEvent> &events, qsizetype &at, int index, Block &b);
    qsizetype heldTail(const QString &text, qsizetype from) const;

    QStringList m_forms;
    qsizetype m_longest = 0;
    std::map<int, Block> m_blocks;
    QList<Edit> m_edits; // of the last apply()
};

} // namespace sw::upstream
