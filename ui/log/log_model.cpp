#include "ui/log/log_model.h"
#include "ui/shared/plain_tip.h"

#include "ui/shared/state_palette.h"

#include <QDateTime>
#include <QJsonValue>

namespace sw::ui {

LogModel::LogModel(int capacity, QObject *parent) : QAbstractTableModel(parent), m_capacity(std::max(1, capacity)) {}

int LogModel::rowCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : int(m_lines.size());
}

int LogModel::columnCount(const QModelIndex &parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

int LogModel::levelRank(const QString &level) {
    if (level == QLatin1String("error"))
        return 2;
    if (level == QLatin1String("warn") || level == QLatin1String("warning"))
        return 1;
    return 0;
}

QVariant LogModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Time:
        return tr("Time");
    case Level:
        return tr("Level");
    case Message:
        return tr("Message");
    case Details:
        return tr("Details");
    }
    return {};
}

QVariant LogModel::data(const QModelIndex &index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Line &l = m_lines[size_t(index.row())];
    switch (role) {
    case LevelRankRole:
        return levelRank(l.level);
    case SearchTextRole:
        return l.message + QLatin1Char(' ') + l.details;
    case Qt::ToolTipRole:
        if (index.column() == Time)
            return l.tsIso;
        if (index.column() == Details)
            return plainTip(l.details);
        return {};
    case Qt::DecorationRole:
        if (index.column() == Level && levelRank(l.level) > 0)
            return StatePalette::dot(levelRank(l.level) == 2 ? HealthState::Error : HealthState::Marks, 10);
        return {};
    case Qt::DisplayRole:
        switch (index.column()) {
        case Time:
            return l.time;
        case Level:
            return l.level;
        case Message:
            return peerText(l.message);
        case Details:
            return peerText(l.details);
        }
        return {};
    }
    return {};
}

void LogModel::append(const QList<QJsonObject> &lines) {
    if (lines.isEmpty())
        return;
    const int n = int(std::min<qsizetype>(lines.size(), m_capacity));
    const int overflow = int(m_lines.size()) + n - m_capacity;
    if (overflow > 0) {
        beginRemoveRows({}, int(m_lines.size()) - overflow, int(m_lines.size()) - 1);
        m_lines.erase(m_lines.end() - overflow, m_lines.end());
        endRemoveRows();
    }
    beginInsertRows({}, 0, n - 1);
    for (qsizetype i = lines.size() - n; i < lines.size(); ++i) {
        const QJsonObject &o = lines.at(i);
        Line l;
        l.tsIso = o.value(QStringLiteral("ts")).toString();
        const QDateTime ts = QDateTime::fromString(l.tsIso, Qt::ISODateWithMs);
        l.time = ts.isValid() ? ts.toLocalTime().toString(QStringLiteral("HH:mm:ss.zzz")) : l.tsIso;
        l.level = o.value(QStringLiteral("level")).toString(QStringLiteral("info"));
        l.message = o.value(QStringLiteral("msg")).toString();
        // The keys a reader looks for first, then the rest in name order.
        static const QStringList first{QStringLiteral("requestId"),     QStringLiteral("tenant"),
                                       QStringLiteral("model"),         QStringLiteral("resolvedProvider"),
                                       QStringLiteral("resolvedModel"), QStringLiteral("attempt"),
                                       QStringLiteral("failure"),       QStringLiteral("status"),
                                       QStringLiteral("outcome"),       QStringLiteral("next"),
                                       QStringLiteral("error")};
        QStringList keys = o.keys();
        std::stable_sort(keys.begin(), keys.end(), [](const QString &a, const QString &b) {
            const auto ia = first.indexOf(a), ib = first.indexOf(b);
            return (ia < 0 ? first.size() : ia) < (ib < 0 ? first.size() : ib);
        });
        QStringList parts;
        for (const QString &key : std::as_const(keys)) {
            if (key == QLatin1String("ts") || key == QLatin1String("level") || key == QLatin1String("msg"))
                continue;
            const QJsonValue v = o.value(key);
            const QString text = v.isString()   ? v.toString()
                                 : v.isDouble() ? QString::number(v.toDouble())
                                 : v.isBool()   ? (v.toBool() ? QStringLiteral("true") : QStringLiteral("false"))
                                                : QStringLiteral("…");
            parts << QStringLiteral("%1=%2").arg(key, text);
        }
        l.details = parts.join(QLatin1Char(' '));
        m_lines.push_front(std::move(l));
    }
    endInsertRows();
}

} // namespace sw::ui
