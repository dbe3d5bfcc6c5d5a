#include "ui/attempts/request_story.h"

#include "ui/shared/plain_tip.h"

#include <QObject>

namespace sw::ui {

namespace {
void byAttempt(QList<telemetry::AttemptRecord> &a) {
    std::sort(a.begin(), a.end(), [](const auto &x, const auto &y) { return x.attempt < y.attempt; });
}

QString why(const telemetry::AttemptRecord &a) {
    if (a.status > 0)
        return QString::number(a.status);
    if (!a.failure.isEmpty())
        return a.failure;
    return telemetry::outcomeName(a.outcome);
}
} // namespace

bool RequestStory::answered(const QList<telemetry::AttemptRecord> &attempts) {
    return std::any_of(attempts.begin(), attempts.end(),
                       [](const auto &a) { return a.outcome == telemetry::AttemptOutcome::Committed; });
}

QString RequestStory::line(QList<telemetry::AttemptRecord> attempts) {
    if (attempts.isEmpty())
        return {};
    byAttempt(attempts);
    const QString model = peerText(attempts.first().requestedModel); // a client's words
    QStringList failures;
    const telemetry::AttemptRecord *winner = nullptr;
    for (const auto &a : attempts) {
        if (a.outcome == telemetry::AttemptOutcome::Committed)
            winner = &a;
        else if (a.outcome == telemetry::AttemptOutcome::Failed)
            failures << QStringLiteral("%1 %2").arg(peerText(a.provider.isEmpty() ? a.candidate : a.provider), why(a));
        else if (a.outcome == telemetry::AttemptOutcome::Skipped) // not asked: read as no failure (probe K1 11)
            failures << QObject::tr("%1 skipped (%2)")
                            .arg(peerText(a.provider.isEmpty() ? a.candidate : a.provider),
                                 a.failure.isEmpty() ? telemetry::outcomeName(a.outcome) : peerText(a.failure));
    }
    if (winner) {
        QString s = QStringLiteral("\u2713 %1 \u2192 %2").arg(model, peerText(winner->candidate));
        if (winner->attempt > 1)
            s += QObject::tr(" on attempt %1").arg(winner->attempt);
        if (!failures.isEmpty())
            s += QStringLiteral(", ") + failures.join(QStringLiteral(", "));
        return s;
    }
    const auto &last = attempts.last();
    if (last.outcome == telemetry::AttemptOutcome::Refused) // no upstream was asked
        return QObject::tr("\u2298 %1 refused by the gateway: %2 (HTTP %3)")
            .arg(model.isEmpty() ? QObject::tr("request") : model, peerText(last.failure))
            .arg(last.status);
    if (last.outcome == telemetry::AttemptOutcome::Aborted)
        return QObject::tr("\u25CB %1: client left after %2 attempt(s)").arg(model).arg(last.attempt);
    return QObject::tr("\u2716 %1 unanswered: %2")
        .arg(model, failures.isEmpty() ? why(last) : failures.join(QStringLiteral(", ")));
}

QStringList RequestStory::steps(QList<telemetry::AttemptRecord> attempts) {
    byAttempt(attempts);
    QStringList out;
    for (const auto &a : attempts) {
        if (a.outcome == telemetry::AttemptOutcome::Refused) {
            QString s = QObject::tr("Refused by the gateway before any upstream (%1, HTTP %2)")
                            .arg(peerText(a.failure))
                            .arg(a.status);
            if (!a.message.isEmpty())
                s += QStringLiteral(": ") + peerText(a.message);
            out << s;
            continue;
        }
        QString s = QObject::tr("Attempt %1: %2 — %3")
                        .arg(a.attempt)
                        .arg(a.candidate.isEmpty() ? QObject::tr("(no candidate)") : peerText(a.candidate),
                             telemetry::outcomeName(a.outcome));
        if (!a.failure.isEmpty())
            s += QStringLiteral(" (%1%2)").arg(a.failure,
                                               a.status > 0 ? QStringLiteral(", HTTP %1").arg(a.status) : QString());
        s += QObject::tr(" after %1 ms").arg(a.elapsedMs);
        if (a.ttftMs)
            s += QObject::tr(", first token at %1 ms").arg(*a.ttftMs);
        if (!a.message.isEmpty())
            s += QStringLiteral(": ") + peerText(a.message); // an upstream's words
        if (!a.dropped.isEmpty())                            // the client's field names
            s += QObject::tr("; sent without %1").arg(peerText(a.dropped.join(QStringLiteral(", "))));
        out << s;
    }
    return out;
}

} // namespace sw::ui
