#include "core/upstream/claude_models.h"

#include "core/model/chat.h"

#include <QStringList>

namespace sw::upstream {

ClaudeModel ClaudeModel::of(const QString &modelId) {
    ClaudeModel model;
    const qsizetype at = modelId.indexOf(QLatin1String("claude"), 0, Qt::CaseInsensitive);
    if (at < 0)
        return model;
    // The words after "claude": a family name and the version's numbers, either order
    // (claude-3-7-sonnet, claude-sonnet-4-5), a release date (eight digits) never a version.
    const QString rest = modelId.mid(at + 6).toLower();
    bool inVersion = false;
    int numbers = 0;
    qsizetype i = 0;
    while (i < rest.size()) {
        if (!rest.at(i).isLetterOrNumber()) {
            ++i;
            continue;
        }
        qsizetype end = i;
        while (end < rest.size() && rest.at(end).isLetterOrNumber())
            ++end;
        const QStringView word = QStringView(rest).mid(i, end - i);
        bool number = false;
        const int value = word.size() <= 2 ? word.toInt(&number) : 0;
        if (number && numbers < 2 && (numbers == 0 || inVersion)) {
            (numbers == 0 ? model.major : model.minor) = value;
            ++numbers;
            inVersion = true;
        } else {
            inVersion = false;
            if (model.family.isEmpty())
                for (const char *family : {"opus", "sonnet", "haiku", "fable", "mythos"})
                    if (word == QLatin1String(family))
                        model.family = QLatin1String(family);
        }
        i = end;
    }
    return model;
}

bool ClaudeModel::takesAdaptiveThinking() const {
    return !known() || family == QLatin1String("mythos") || atLeast(4, 6);
}

bool ClaudeModel::takesEffort() const {
    return takesAdaptiveThinking() || (family == QLatin1String("opus") && major == 4 && minor == 5);
}

bool ClaudeModel::refusesManualThinking() const {
    return known() && (family == QLatin1String("mythos") || atLeast(4, 7));
}

bool ClaudeModel::refusesDisabledThinking() const {
    if (!refusesManualThinking())
        return false;
    // Opus, Sonnet and Haiku 5 still take `disabled` (at effort high or below); 5.5 does not.
    if (major == 5 && minor < 5 && family != QLatin1String("fable") && family != QLatin1String("mythos"))
        return false;
    return true;
}

bool ClaudeModel::refusesForcedToolUse() const {
    if (!known())
        return false;
    if (family == QLatin1String("fable"))
        return atLeast(5, 1);
    return (family == QLatin1String("opus") || family == QLatin1String("sonnet")) && atLeast(5, 5);
}

bool ClaudeModel::takesSystemMessages() const {
    if (family == QLatin1String("mythos") || family == QLatin1String("fable"))
        return known();
    if (family == QLatin1String("opus"))
        return atLeast(4, 8);
    return atLeast(5, 5); // Sonnet and Haiku 5 do not
}

QString claudeEffortFor(const QString &effort, int budget) {
    if (effort == QLatin1String("minimal"))
        return QStringLiteral("low");
    if (effort == QLatin1String("low") || effort == QLatin1String("medium") || effort == QLatin1String("high") ||
        effort == QLatin1String("xhigh") || effort == QLatin1String("max"))
        return effort;
    for (const char *level : {"low", "medium", "high"})
        if (budget <= model::thinkingBudgetForEffort(QLatin1String(level)))
            return QLatin1String(level);
    return QStringLiteral("xhigh");
}

} // namespace sw::upstream
