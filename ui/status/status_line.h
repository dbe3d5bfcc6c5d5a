#pragma once
// The line across the top (docs/gui.md): state (colour + icon + word), the listening
// URL with a copy button, requests per minute, open streams, pause.

#include "core/snapshot/engine_snapshot.h"
#include "ui/shared/state_palette.h"

#include <QFrame>

class QLabel;
class QToolButton;

namespace sw::ui {

class EngineCommands;

class StatusLine final : public QFrame {
    Q_OBJECT
public:
    StatusLine(EngineCommands *commands, QWidget *parent = nullptr);
    void applySnapshot(const snapshot::EngineSnapshot &snapshot);
    void setState(HealthState state, const QString &detail);
    void setPaused(bool paused);
    // "1 key out of use" (parked, rejected or missing) next to the state word; hidden when every key is in use.
    void setKeysParked(int count);
    QString baseUrl() const { return m_baseUrl; }

private:
    EngineCommands *m_commands;
    QString m_baseUrl;
    bool m_paused = false;
    QLabel *m_stateIcon = nullptr;
    QLabel *m_stateWord = nullptr;
    QLabel *m_url = nullptr;
    QToolButton *m_copy = nullptr;
    QLabel *m_rate = nullptr;
    QLabel *m_streams = nullptr;
    QLabel *m_keys = nullptr;
    QLabel *m_store = nullptr;
    QToolButton *m_pause = nullptr;
};

} // namespace sw::ui
