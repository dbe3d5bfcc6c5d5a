#include "model/gateway_error.h"

namespace sw::model {

ErrorCategory GatewayError::categoryForStatus(int status)
{
    switch (status) {
    case 400: case 422: return ErrorCategory::InvalidRequest;
    case 401: return ErrorCategory::Authentication;
    case 403: return ErrorCategory::Permission;
    case 404: return ErrorCategory::NotFound;
    case 409: return ErrorCategory::Conflict;
    case 413: return ErrorCategory::PayloadTooLarge;
    case 415: return ErrorCategory::UnsupportedMedia;
    case 429: return ErrorCategory::RateLimit;
    case 503: case 529: return ErrorCategory::Overloaded;
    case 408: case 504: return ErrorCategory::Timeout;
    default: return status >= 400 && status < 500 ? ErrorCategory::InvalidRequest : ErrorCategory::ServerError;
    }
}

} // namespace sw::model
