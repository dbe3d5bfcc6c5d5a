#include "model/chat.h"

namespace sw::model {

QString stopReasonName(StopReason r)
{
    switch (r) {
    case StopReason::Stop: return QStringLiteral("stop");
    case StopReason::Length: return QStringLiteral("length");
    case StopReason::ToolUse: return QStringLiteral("toolUse");
    case StopReason::Error: return QStringLiteral("error");
    case StopReason::Aborted: return QStringLiteral("aborted");
    }
    return QStringLiteral("stop");
}

} // namespace sw::model
