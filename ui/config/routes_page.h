#pragma once
// Routes: the name clients send as model, its candidates in failover order
// (reordered with Up/Down or by dragging), alias globs and cost ceiling.

#include "ui/config/list_form_page.h"

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QListWidget;

namespace sw::ui {

class RoutesPage final : public MapPage<config::RouteConfig> {
public:
    RoutesPage(config::Config &working, const ConfigDialogs &dialogs, QWidget *parent = nullptr);

private:
    config::RouteConfig named(config::RouteConfig item, const QString &name) const override;
    void loadItem(const config::RouteConfig &r, bool exists) override;
    void moveCandidate(int delta);

    QListWidget *m_candidates = nullptr;
    QComboBox *m_picker = nullptr;
    QLineEdit *m_aliases = nullptr;
    QDoubleSpinBox *m_ceiling = nullptr;
};

} // namespace sw::ui
