#pragma once
// The structured log (JSON lines) as a table: a bounded ring buffer, newest
// first, appended in batches.

#include <QAbstractTableModel>
#include <QJsonObject>
#include <deque>

namespace sw::ui {

class LogModel final : public QAbstractTableModel {
    Q_OBJECT
    Q_DISABLE_COPY_MOVE(LogModel)
public:
    enum Column { Time, Level, Message, Details, ColumnCount };
    enum Role { LevelRankRole = Qt::UserRole + 1, SearchTextRole };

    explicit LogModel(int capacity = 5000, QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void append(const QList<QJsonObject> &linesOldestFirst);
    static int levelRank(const QString &level); // info 0, warn 1, error 2

private:
    struct Line {
        QString time;  // HH:mm:ss.zzz local
        QString tsIso; // as logged
        QString level;
        QString message;
        QString details; // the other fields, key=value
    };
    int m_capacity;
    std::deque<Line> m_lines; // front = newest
};

} // namespace sw::ui
