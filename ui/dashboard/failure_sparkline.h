#pragma once
// A small bar per minute (oldest left) in the error colour on a quiet baseline:
// "is it still failing, or was that ten minutes ago?" at a glance.

#include <QList>
#include <QWidget>

namespace sw::ui {

class FailureSparkline final : public QWidget {
    Q_OBJECT
public:
    explicit FailureSparkline(QWidget *parent = nullptr);
    void setCounts(const QList<qint64> &perMinute);
    QSize sizeHint() const override { return {300, 44}; }

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    QList<qint64> m_counts;
};

} // namespace sw::ui
