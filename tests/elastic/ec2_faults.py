"""A loopback proxy in front of moto's server that answers some EC2 `CreateFleet` calls itself, in EC2's own XML:
moto launches whatever it is asked to, so the capacity and quota errors a real region gives are injected here.

- `errors[(instance_type, zone)] = code`: an instant fleet's answer with no instance and one `errorSet` item
  (`CreateFleetError`: launchTemplateAndOverrides, lifecycle, errorCode, errorMessage; the EC2 API reference,
  CreateFleet response elements), the way an instant fleet reports InsufficientInstanceCapacity or VcpuLimitExceeded;
- `refusals[(instance_type, zone)] = (status, code)`: the call itself refused, EC2's error response
  (`<Response><Errors><Error><Code>...`, the EC2 API reference "Error codes"), as for UnauthorizedOperation;
- everything else goes to moto unchanged. `calls` records each CreateFleet's (instance type, zone).
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from urllib.parse import parse_qs

from ..fake_http import LoopbackServer, QuietHandler

EC2_XMLNS = "http://ec2.amazonaws.com/doc/2016-11-15/"
MESSAGES = {
    "InsufficientInstanceCapacity": "We currently do not have sufficient {type} capacity in the Availability Zone "
                                    "you requested ({zone}). Our system will be working on provisioning additional "
                                    "capacity.",
    "VcpuLimitExceeded": "You have requested more vCPU capacity than your current vCPU limit of 0 allows for the "
                         "instance bucket that the specified instance type belongs to.",
    "UnauthorizedOperation": "You are not authorized to perform this operation.",
}


class Ec2Faults:
    def __init__(self, moto_url: str):
        self.moto_url = moto_url
        self.errors: dict[tuple[str, str], str] = {}
        self.refusals: dict[tuple[str, str], tuple[int, str]] = {}
        self.calls: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def server(self) -> LoopbackServer:
        proxy = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                code, headers, answer = proxy.answer(self.path, dict(self.headers), body)
                self.send_response(code)
                for key, value in headers:
                    if key.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        return LoopbackServer(Handler)

    def answer(self, path: str, headers: dict, body: bytes) -> tuple[int, list, bytes]:
        form = {key: values[0] for key, values in parse_qs(body.decode()).items()}
        if form.get("Action") == "CreateFleet":
            prefix = "LaunchTemplateConfigs.1.Overrides.1."
            target = (form.get(prefix + "InstanceType", ""), form.get(prefix + "AvailabilityZone", ""))
            with self.lock:
                self.calls.append(target)
            if target in self.refusals:
                status, code = self.refusals[target]
                return status, [("Content-Type", "text/xml")], refusal(code, target).encode()
            if target in self.errors:
                return 200, [("Content-Type", "text/xml")], fleet_error(self.errors[target], target, form).encode()
        request = urllib.request.Request(self.moto_url + path, data=body, method="POST", headers={
            key: value for key, value in headers.items() if key.lower() not in ("host", "content-length")})
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status, list(reply.headers.items()), reply.read()
        except urllib.error.HTTPError as error:
            return error.code, list(error.headers.items()), error.read()


def _message(code: str, target: tuple[str, str]) -> str:
    return MESSAGES.get(code, code).format(type=target[0], zone=target[1])


def fleet_error(code: str, target: tuple[str, str], form: dict) -> str:
    template = form.get("LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId", "")
    lifecycle = form.get("TargetCapacitySpecification.DefaultTargetCapacityType", "on-demand")
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<CreateFleetResponse xmlns="{EC2_XMLNS}">'
            "<requestId>5d1f2b7c-0000-4000-8000-000000000001</requestId>"
            "<fleetId>fleet-0a1b2c3d4e5f60718</fleetId>"
            "<errorSet><item><launchTemplateAndOverrides><launchTemplateSpecification>"
            f"<launchTemplateId>{template}</launchTemplateId><version>1</version></launchTemplateSpecification>"
            f"<overrides><instanceType>{target[0]}</instanceType><availabilityZone>{target[1]}</availabilityZone>"
            f"</overrides></launchTemplateAndOverrides><lifecycle>{lifecycle}</lifecycle>"
            f"<errorCode>{code}</errorCode><errorMessage>{_message(code, target)}</errorMessage></item></errorSet>"
            "<fleetInstanceSet/></CreateFleetResponse>")


def refusal(code: str, target: tuple[str, str]) -> str:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code>'
            f"<Message>{_message(code, target)}</Message></Error></Errors>"
            "<RequestID>5d1f2b7c-0000-4000-8000-000000000002</RequestID></Response>")
