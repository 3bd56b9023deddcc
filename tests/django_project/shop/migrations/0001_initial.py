from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = ()  # Django copies both into lists of its own

    operations = (
        migrations.CreateModel(
            name="Order",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.CharField(max_length=20, unique=True)),
                ("sms_job_id", models.CharField(blank=True, max_length=40)),
                ("sms_status", models.CharField(blank=True, max_length=20)),
            ],
        ),
    )
