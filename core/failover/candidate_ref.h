#pragma once
#include <QString>

namespace sw::failover {

// What the failover loop knows of one candidate.
struct CandidateRef {
    QString provider;
    QString modelId;
    QString baseUrl;
    QString name() const { return provider + QLatin1Char('/') + modelId; }
    // One string per candidate (tried set, marks): provider, id and base URL joined by NUL,
    // which none of them contains, so two candidates never share a key.
    QString key() const { return provider + QChar(0) + modelId + QChar(0) + baseUrl; }
};

} // namespace sw::failover
