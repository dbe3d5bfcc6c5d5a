#pragma once
// Usage screen: tokens and cost per tenant and per provider, every attempt
// counted (including attempts that failed after spending tokens).

#include "snapshot/engine_snapshot.h"

#include <QWidget>

class QLabel;

namespace sw::ui {

class UsageModel;
class EmptyStateStack;

class UsageView final : public QWidget {
    Q_OBJECT
public:
    explicit UsageView(QWidget *parent = nullptr);
    void applySnapshot(const snapshot::EngineSnapshot &snapshot);
    UsageModel *byTenant() const { return m_byTenant; }
    UsageModel *byProvider() const { return m_byProvider; }

private:
    UsageModel *m_byTenant;
    UsageModel *m_byProvider;
    QLabel *m_total = nullptr;
    EmptyStateStack *m_stack = nullptr;
};

} // namespace sw::ui
