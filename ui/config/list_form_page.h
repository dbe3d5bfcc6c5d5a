#pragma once
// The editor shared by the pages that edit a map of the configuration
// (providers, models, routes, tenants): the names on the left with Add…,
// Duplicate… and Remove under them, and a form for the selected one on the
// right, disabled while nothing is selected.

#include "ui/config/config_page.h"

#include <QMap>

class QFormLayout;
class QListWidget;
class QPushButton;

namespace sw::ui {

class ListFormPage : public ConfigPage {
    Q_OBJECT
public:
    struct Texts {
        QString key;       // object names: <key>List, <key>Form, <key>Add, <key>Duplicate, <key>Remove
        QString addTitle;  // "Add provider"
        QString nameLabel; // what to type for a new name
    };

    void load() final;
    // The selected name; empty when nothing is selected.
    QString current() const;
    void select(const QString &name);

protected:
    ListFormPage(config::Config &working, const ConfigDialogs &dialogs, const Texts &texts, QWidget *parent);

    // The form on the right; a page adds its rows here.
    QWidget *formHost() const { return m_formHost; }
    QFormLayout *form() const { return m_form; }
    // The selected item -> form again (after a change the form shows derived state of).
    void showForm();

    virtual QStringList names() const = 0;
    virtual bool contains(const QString &name) const = 0;
    virtual void insertNew(const QString &name) = 0;
    virtual void insertCopy(const QString &from, const QString &name) = 0;
    virtual void remove(const QString &name) = 0;
    // Fills the form from `name` (empty when nothing is selected); widget signals are not edits meanwhile.
    virtual void loadForm(const QString &name) = 0;
    // Whether a typed name can name a new item (besides not being taken).
    virtual bool acceptsName(const QString &name) const { return !name.isEmpty(); }
    // After Add… or Duplicate… put `name` in and selected it.
    virtual void added(const QString &) {}

private:
    void addItem(const QString &from);
    void removeItem();

    Texts m_texts;
    QListWidget *m_list = nullptr;
    QWidget *m_formHost = nullptr;
    QFormLayout *m_form = nullptr;
    QPushButton *m_duplicate = nullptr;
    QPushButton *m_remove = nullptr;
};

// A ListFormPage over one QMap<QString, T> of the working copy.
template <typename T> class MapPage : public ListFormPage {
protected:
    using Map = QMap<QString, T>;

    MapPage(config::Config &working, const ConfigDialogs &dialogs, Map config::Config::*map, const Texts &texts,
            QWidget *parent)
        : ListFormPage(working, dialogs, texts, parent), m_map(map) {}

    Map &items() { return m_working.*m_map; }
    const Map &items() const { return m_working.*m_map; }
    T selectedItem() const { return items().value(current()); }

    // Applies a widget's change to the selected item.
    template <typename Fn> void edit(Fn &&fn) {
        if (m_loading || !items().contains(current()))
            return;
        fn(items()[current()]);
        changed();
    }

    // `item` stored under `name`: its own name fields set to match.
    virtual T named(T item, const QString &name) const = 0;
    // What Add… starts from.
    virtual T fresh() const { return T{}; }
    // What Duplicate… keeps of the original.
    virtual T copied(T item) const { return item; }
    virtual void loadItem(const T &item, bool exists) = 0;

    QStringList names() const override { return items().keys(); }
    bool contains(const QString &name) const override { return items().contains(name); }
    void insertNew(const QString &name) override { items().insert(name, named(fresh(), name)); }
    void insertCopy(const QString &from, const QString &name) override {
        items().insert(name, named(copied(items().value(from)), name));
    }
    void remove(const QString &name) override { items().remove(name); }
    void loadForm(const QString &name) override { loadItem(items().value(name), items().contains(name)); }

private:
    Map config::Config::*m_map;
};

} // namespace sw::ui
