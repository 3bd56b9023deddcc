"""The shop's one model: an order, which tells its customer by SMS when it ships."""

from django.db import models


class Order(models.Model):
    number = models.CharField(max_length=20, unique=True)
    #: The message that told the customer (its job id), once sent.
    sms_job_id = models.CharField(max_length=40, blank=True)
    #: What the delivery signals said last ("delivered", "failed" …).
    sms_status = models.CharField(max_length=20, blank=True)
